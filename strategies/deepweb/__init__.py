"""Deep-web crawling strategies (issue #17), pure Python: which form submissions to make.

- `templates`: a form's binding inputs, query templates, their submissions and URLs;
- `isit`: the informativeness test and the Apriori-like candidate generation of ISIT
  (Madhavan et al., "Google's Deep-Web Crawl", VLDB 2008);
- `keywords`: text-box probing with seed words and words mined from result pages
  (Ntoulas, Zerfos, Cho, "Downloading textual hidden web content through keyword
  queries", JCDL 2005);
- `pagination`: a submission's result pages from its first page (rel=next, count);
- `planner`: one host's probing state, advanced once per round (`advance`).
"""
