"""`sampling`: Cho & Ntoulas, "Effective change detection using sampling", VLDB 2002.
Each cycle a few pages of every site are sampled; the sites whose samples changed most get
the rest of the budget, whole site by whole site (their greedy policy). The unit is the
host; a site's change ratio is the detected changes per observed revisit interval of its
members (the sample), pooled."""
from strategies.recrawl.base import Policy, group_greedy, known_rates, pooled_ratio


class Sampling(Policy):
    name = "sampling"

    @classmethod
    def params(cls):
        return {"sample_size": 2}

    def group_ids(self, pages):
        return pages.groups if pages.groups is not None else pages.features["host"]

    def frequencies(self, pages, budget, cycle=1.0):
        ids = self.group_ids(pages)
        if pages.visits is not None:
            ratio = pooled_ratio(ids, pages.visits, pages.changes, known_rates(pages))
        else:
            ratio = pooled_ratio(ids, [1.0] * len(pages), known_rates(pages))
        return group_greedy(ids, ratio, budget, cycle, int(self.sample_size))
