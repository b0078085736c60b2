"""The notebooks in notebooks/ run, top to bottom, against a small crawl (#14).

Each is executed with nbclient in a kernel of this interpreter (the venv's python) against
a two-round crawl of the small simulated web, and fails on any cell error. The notebooks
are kept in git without outputs: a committed output fails here. Executing them is marked
`long` (make test-long); the checks of the files themselves run in the default suite.
"""
import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from pipelines.crawldir import CrawlDir
from tests.e2e import crawlstate

LONG = pytest.mark.long   # executing notebooks: not in the default suite (make test-long; .ci/run runs it)

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
ALL = sorted(NOTEBOOKS.glob("*.ipynb"))


@pytest.fixture(scope="module")
def crawl(simweb_small, tmp_path_factory):
    """A two-round crawl, with the web's ground truth where `make demo` leaves it
    (CRAWL-simweb/truth beside the crawl directory)."""
    base = tmp_path_factory.mktemp("notebook_crawl")
    d = base / "crawl"
    crawlstate.start_crawl(simweb_small, d, "--max_pages", "40")
    crawlstate.run_rounds(d, "--rounds", "2")
    simweb_small.web.export(base / "crawl-simweb" / "truth")
    return d


@pytest.fixture(scope="module")
def vertical_crawl(simweb_small, tmp_path_factory):
    """A three-round Shark-Search crawl of the small web's finance pages, frontier bounded."""
    d = tmp_path_factory.mktemp("notebook_vertical") / "crawl"
    crawlstate.start_crawl(simweb_small, d, "--strategy", "shark_search", "--mode", "vertical",
                           "--topic", "finance,stock,bond,market,dividend,equity",
                           "--max_pages", "12", "--max_buffer", "20", "--harvest_floor", "0.01")
    crawlstate.run_rounds(d, "--rounds", "3")
    return d


@pytest.fixture(scope="module")
def incremental_crawl(tmp_path_factory):
    """The small web crawled on a simulated clock: day 0 to the end, then two daily rounds
    of revisits (uniform policy), as tests/e2e/test_incremental.py does."""
    from tests.simweb.process import SimWebProcess
    web = SimWebProcess("small", seed=3, clock_file=True, base_rate_per_day=1.0)
    try:
        t0 = web.web.cfg.sim_start
        web.set_time(t0)
        d = tmp_path_factory.mktemp("notebook_incremental") / "crawl"
        crawlstate.start_crawl(web, d, "--mode", "incremental", "--refetch_policy", "uniform")
        crawlstate.run_rounds(d, "--until_empty", "--round_time", str(t0))
        for k in (1, 2):
            web.set_time(t0 + k * 86400)
            crawlstate.run_rounds(d, "--rounds", "1", "--round_time", str(t0 + k * 86400))
        yield d
    finally:
        web.stop()


def execute(path, env):
    """Run the notebook at `path` with `env` added to the kernel's environment; return it."""
    nb = nbformat.read(path, as_version=4)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(nb, kernel_name="python3", timeout=300,
                       resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return nb


def kernel_env(crawl_dir, **extra):
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {"BEAMCRAWL_CRAWL_DIR": str(crawl_dir), "PYTHONPATH": path, **extra}


def outputs(nb, kind):
    """Texts (kind 'text') or PNGs (kind 'image/png') of every code cell's outputs."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if kind == "text" and out.get("output_type") == "stream":
                found.append(out["text"])
            elif kind in out.get("data", {}):
                found.append(out["data"][kind])
    return found


@LONG
def test_the_kernel_is_this_interpreter():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys; print(sys.executable)")])
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    assert outputs(nb, "text") == [sys.executable + "\n"]


@LONG
def test_crawl_overview_runs_against_a_crawl(crawl):
    nb = execute(NOTEBOOKS / "crawl_overview.ipynb", kernel_env(crawl))
    text = "".join(outputs(nb, "text"))
    visited = CrawlDir(str(crawl)).read_table("visited", 2, columns=["url"]).num_rows
    assert f"{crawl}: rounds 0..2" in text
    assert f"visited {visited} URLs" in text          # the whole-crawl report's line
    assert len(outputs(nb, "image/png")) >= 6          # growth, mix, hosts, depth, scores, degrees


@LONG
@pytest.mark.parametrize("truth", ["beside the crawl", "none"])
def test_strategies_runs_over_the_truth_or_the_crawls_own_graph(crawl, truth):
    extra = {} if truth == "beside the crawl" else {"BEAMCRAWL_GROUND_TRUTH": str(crawl) + "-no-such-truth"}
    nb = execute(NOTEBOOKS / "strategies.ipynb", kernel_env(crawl, **extra))
    text = "".join(outputs(nb, "text"))
    assert ("crawl-simweb/truth" in text) == (truth == "beside the crawl")
    assert "omniscient" in text and "this crawl (bfs)" in text
    assert len(outputs(nb, "image/png")) == 2


@LONG
def test_focused_plots_the_harvest_relevance_and_what_the_focus_dropped(vertical_crawl):
    nb = execute(NOTEBOOKS / "focused.ipynb", kernel_env(vertical_crawl))
    text = "".join(outputs(nb, "text"))
    c = CrawlDir(str(vertical_crawl))
    h = c.read_report(3)["harvest"]
    assert "strategy shark_search" in text and "3 of 3 rounds report a harvest" in text
    assert (f"running harvest: {h['running_relevant']} relevant of {h['running_visited']} visited"
            in text)
    assert "'buffer_full':" in text
    assert len(outputs(nb, "image/png")) == 3          # harvest, relevance, dropped


@LONG
def test_focused_says_a_crawl_without_a_topic_has_no_harvest(crawl):
    nb = execute(NOTEBOOKS / "focused.ipynb", kernel_env(crawl))
    text = "".join(outputs(nb, "text"))
    assert "no round reports a harvest" in text and "no page has a relevance" in text
    assert outputs(nb, "image/png") == []


@LONG
def test_freshness_plots_revisits_rates_and_the_policies(incremental_crawl):
    nb = execute(NOTEBOOKS / "freshness.ipynb", kernel_env(incremental_crawl))
    text = "".join(outputs(nb, "text"))
    c = CrawlDir(str(incremental_crawl))
    rec = [c.read_report(n).get("recrawl") for n in c.committed_rounds()[1:]]
    rec = [r for r in rec if r]
    assert "mode incremental" in text and f"{len(rec)} of " in text
    assert (f"304s {sum(r.get('not_modified', 0) for r in rec)}, "
            f"bytes saved {sum(r.get('bytes_saved', 0) for r in rec)}") in text
    assert "uniform" in text and "optimal" in text
    assert len(outputs(nb, "image/png")) == 3          # per round, rates, policies


@LONG
def test_freshness_says_a_batch_crawl_has_no_revisits(crawl):
    nb = execute(NOTEBOOKS / "freshness.ipynb", kernel_env(crawl))
    text = "".join(outputs(nb, "text"))
    assert "no round reports revisits" in text and outputs(nb, "image/png") == []


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_notebooks_are_committed_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in code), \
        f"{path.name} has outputs: clear them before committing (Jupyter: Edit > Clear Outputs of All Cells)"
    assert "BEAMCRAWL_CRAWL_DIR" in "".join(code[0]["source"]), "the first code cell names the crawl directory"


def test_every_notebook_is_executed_here():
    assert {p.name for p in ALL} == {"crawl_overview.ipynb", "strategies.ipynb", "focused.ipynb",
                                       "freshness.ipynb"}
