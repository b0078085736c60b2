"""OPIC: On-line Page Importance Computation (Abiteboul, Preda, Cobena, WWW 2003).

Every page i holds cash C[i] and history H[i]; G = ΣH is the total history. Visiting
(fetching) a page moves its cash into its history and hands the same amount on to its
children, so cash is never created or destroyed:

    invariant:  ΣC (real pages + virtual page) = 1      and      Σ(H + C) = G + 1

(The brief's "ΣC + G = 1" is this invariant stated with the wrong normalisation: G grows
with every visit; what is conserved is the cash.) The importance estimate of page i is
(H[i] + C[i]) / (G + 1); estimates of all pages plus the virtual page sum to 1.

Virtual page (connectivity). The paper adds a virtual page linked from and linking to
every page, which makes the graph strongly connected so every page keeps receiving cash.
Here a visited page passes a share `damping` of its cash to its out-links (split evenly)
and the rest, 1 - damping, to the virtual page; a page with no out-links gives it all to
the virtual page; visiting the virtual page spreads its cash evenly over the known pages.
With that split, the long-run share of history of each real page is PageRank with the
same damping and uniformly spread dangling mass (the same PageRank as strategies.graph).
`damping=None` gives the paper's literal construction instead: the virtual page is one
more out-link of every page (share 1/(outdeg + 1)).

Where the state lives in a crawl
- frontier.cash / frontier.history for pending pages; visited.cash / visited.history for
  fetched pages (they keep receiving cash, which a recrawl policy can read).
- The virtual page: visiting it at the end of every `opic_distribute` call (the default)
  leaves it with no cash, so only its history is state: one float per round
  (`virtual_history`, e.g. in the round's report.json under "opic"). G can always be
  recomputed as Σ history(visited) + Σ history(frontier) + virtual_history.
- New URLs enter with cash 0 and history 0 (they receive cash from their linkers); seeds
  share the initial unit of cash (`opic_init`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DAMPING = 0.85


@dataclass
class OpicState:
    cash: np.ndarray          # float64 per page
    history: np.ndarray       # float64 per page
    virtual_cash: float = 0.0
    virtual_history: float = 0.0

    @property
    def total_history(self) -> float:
        """G: all history ever accumulated, the virtual page's included."""
        return float(self.history.sum() + self.virtual_history)

    @property
    def total_cash(self) -> float:
        return float(self.cash.sum() + self.virtual_cash)

    def estimate(self) -> np.ndarray:
        return opic_estimate(self.cash, self.history, self.total_history)

    def grow(self, n: int) -> "OpicState":
        """The same state with pages appended (new URLs: no cash, no history)."""
        extra = n - len(self.cash)
        if extra < 0:
            raise ValueError("cannot shrink OPIC state")
        return OpicState(np.concatenate([self.cash, np.zeros(extra)]),
                         np.concatenate([self.history, np.zeros(extra)]),
                         self.virtual_cash, self.virtual_history)


def opic_init(n: int, seeds=None) -> OpicState:
    """Initial state: one unit of cash split evenly over `seeds` (node ids or bool mask),
    or over all n pages when seeds is None."""
    cash = np.zeros(n)
    if seeds is None:
        if n:
            cash[:] = 1.0 / n
    else:
        seeds = np.asarray(seeds)
        idx = np.flatnonzero(seeds) if seeds.dtype == bool else np.unique(seeds)
        if len(idx) == 0:
            raise ValueError("OPIC needs at least one seed")
        cash[idx] = 1.0 / len(idx)
    return OpicState(cash, np.zeros(n))


def opic_distribute(cash, history, fetched_mask, src, dst, *, virtual_cash: float = 0.0,
                    virtual_history: float = 0.0, damping: float | None = DAMPING,
                    known_mask=None, visit_virtual: bool = True, outdeg=None):
    """Visit every page in `fetched_mask` at once; return (cash, history, vcash, vhistory).

    cash, history: float arrays over all known pages (not modified; new arrays returned).
    src, dst: out-links as node ids; only edges whose src is fetched are used, so the
      caller may pass all known edges or just this batch's. Duplicate edges count twice.
    outdeg: out-degree per page if the caller knows more links than it passes (default:
      counted from the edges of fetched pages given here).
    known_mask: the pages the virtual page spreads its cash over (default: all).
    visit_virtual: also visit the virtual page after the real ones (its cash -> history,
      spread evenly over known pages), so that no cash sits idle in it.
    The cash each page hands on is the cash it held before this call; cash arriving at a
    fetched page from another page of the same batch stays as its new cash.
    """
    cash = np.asarray(cash, dtype=np.float64)
    history = np.asarray(history, dtype=np.float64)
    n = len(cash)
    fetched = np.asarray(fetched_mask, dtype=bool)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    use = fetched[src] if len(src) else np.zeros(0, dtype=bool)
    s, d = src[use], dst[use]
    if outdeg is None:
        outdeg = np.bincount(s, minlength=n).astype(np.float64)
    else:
        outdeg = np.asarray(outdeg, dtype=np.float64)

    paid = np.where(fetched, cash, 0.0)           # cash each fetched page hands on
    new_history = history + paid
    new_cash = cash - paid
    has_links = outdeg > 0
    if damping is None:
        per_link = np.divide(paid, outdeg + 1.0, out=np.zeros(n), where=has_links)
        to_virtual = float(np.where(has_links, per_link, paid).sum())
    else:
        per_link = np.divide(paid * damping, outdeg, out=np.zeros(n), where=has_links)
        to_virtual = float(np.where(has_links, paid * (1.0 - damping), paid).sum())
    if len(s):
        new_cash += np.bincount(d, weights=per_link[s], minlength=n)
    vcash = virtual_cash + to_virtual
    vhist = virtual_history
    if visit_virtual and vcash != 0.0:
        known = np.ones(n, dtype=bool) if known_mask is None else np.asarray(known_mask, bool)
        k = int(known.sum())
        if k:
            new_cash[known] += vcash / k
            vhist += vcash
            vcash = 0.0
    return new_cash, new_history, vcash, vhist


def opic_visit(state: OpicState, fetched_mask, src, dst, **kw) -> OpicState:
    """opic_distribute on an OpicState."""
    c, h, vc, vh = opic_distribute(state.cash, state.history, fetched_mask, src, dst,
                                   virtual_cash=state.virtual_cash,
                                   virtual_history=state.virtual_history, **kw)
    return OpicState(c, h, vc, vh)


def opic_estimate(cash, history, total_history: float) -> np.ndarray:
    """(H + C) / (G + 1) per page."""
    return (np.asarray(history) + np.asarray(cash)) / (total_history + 1.0)


def opic_round(page_fp, cash, history, fetched_fp, src_fp, dst_fp, *,
               virtual_history: float = 0.0, damping: float | None = DAMPING):
    """One crawl round's OPIC update, on URL fingerprints (what the round pipeline holds).

    page_fp, cash, history: every known page — visited ∪ frontier, this round's new URLs
      included with cash 0, history 0 — and its state (frontier/visited cash & history).
    fetched_fp: pages fetched this round; src_fp -> dst_fp: their out-links (this round's
      links table). Links to pages that are not in page_fp (e.g. filtered URLs) pay their
      share to the virtual page, so no cash is lost.
    Returns (cash, history, virtual_history), aligned with page_fp. The virtual page is
    visited at the end (its cash spread over all known pages), so its cash is always 0
    between rounds and `virtual_history` is the only scalar to keep (report.json).
    Seeds injected at the start share one unit of cash (opic_init); URLs added later
    (new seeds, sitemaps) start with 0 and receive cash from linkers and the virtual page.
    """
    page_fp = np.asarray(page_fp, dtype=np.int64)
    order = np.argsort(page_fp, kind="stable")
    keys = page_fp[order]

    def ids(fps):
        fps = np.asarray(fps, dtype=np.int64)
        if len(keys) == 0:
            return np.full(len(fps), -1)
        pos = np.clip(np.searchsorted(keys, fps), 0, len(keys) - 1)
        return np.where(keys[pos] == fps, order[pos], -1)

    n = len(page_fp)
    fetched = np.zeros(n, bool)
    f = ids(fetched_fp)
    fetched[f[f >= 0]] = True
    s, d = ids(src_fp), ids(dst_fp)
    ok_src = s >= 0
    s, d = s[ok_src], d[ok_src]
    outdeg = np.bincount(s, minlength=n).astype(np.float64)   # all links, unknown dst too
    known_dst = d >= 0
    return_cash, history_new, vcash, vhist = opic_distribute(
        cash, history, fetched, s[known_dst], d[known_dst], virtual_history=virtual_history,
        damping=damping, outdeg=outdeg, visit_virtual=False)
    # shares of links to unknown pages: to the virtual page
    paid = np.where(fetched, np.asarray(cash, dtype=np.float64), 0.0)
    lost = s[~known_dst]
    if len(lost):
        has = outdeg > 0
        if damping is None:
            per = np.divide(paid, outdeg + 1.0, out=np.zeros(n), where=has)
        else:
            per = np.divide(paid * damping, outdeg, out=np.zeros(n), where=has)
        vcash += float(per[lost].sum())
    if n and vcash:
        return_cash = return_cash + vcash / n
        vhist += vcash
    return return_cash, history_new, vhist
