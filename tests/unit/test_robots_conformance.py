"""benchmarks/robots_conformance.py reads the suites' cases as the suites state them
(hand-written snippets in the suites' shapes; the suites themselves are never in the repo)."""
from benchmarks import robots_conformance as rc

CPP = r'''
// a comment with "a string" in it
TEST(RobotsUnittest, Shapes) {
  const absl::string_view robotstxt =
      "user-agent: FooBot\n"
      "disallow: /\n";
  const std::string url = "http://foo.bar/x";
  EXPECT_FALSE(IsUserAgentAllowed(robotstxt, "FooBot", url));
  {
    std::string robotstxt = "user-agent: *\n";
    std::string longline = "/x/";
    int kMax = 2 * 3;
    while (longline.size() < kMax) {
      absl::StrAppend(&longline, "a");
    }
    absl::StrAppend(&robotstxt, "disallow: ", longline, "\n");
    EXPECT_TRUE(
        IsUserAgentAllowed(robotstxt, "FooBot", absl::StrCat("http://foo.bar", "/y")));
    EXPECT_FALSE(IsUserAgentAllowed(robotstxt, "FooBot", "http://foo.bar/x/aaa/z"));
  }
  EXPECT_TRUE(RobotsMatcher::IsValidUserAgentToObey("Foobot"));
}
'''

PY = '''
import pytest
from protego import Protego


class TestShapes:
    def test_plain(self):
        content = "User-agent: *\\nDisallow: /d"
        rp = Protego.parse(content=content)
        assert rp.can_fetch("https://a.local/x", "*")
        assert not rp.can_fetch("https://a.local/d", "*")
        assert rp.crawl_delay("*") is None


@pytest.mark.parametrize(("pattern", "path", "match"), [("/p", "/p/q", True), ("/p", "/q", False)])
def test_param(pattern, path, match):
    rp = Protego.parse(f"User-Agent: *\\ndisallow: {pattern}\\n")
    assert (not rp.can_fetch(path, "*")) == match


def test_loop():
    rp = Protego.parse("User-agent: a\\nAllow: /g1\\nDisallow: /\\nUser-agent: *\\nDisallow: /\\n")
    for allowed_path in ("/g1", "/g2"):
        if rp.can_fetch(allowed_path, "a"):
            break
    else:
        allowed_path = None
    assert allowed_path == "/g1"
'''


def test_google_cases_are_built_as_the_cpp_builds_its_strings():
    cases = rc.google_cases(CPP)
    assert [(c.url, c.allowed) for c in cases] == [
        ("http://foo.bar/x", False), ("http://foo.bar/y", True), ("http://foo.bar/x/aaa/z", False)]
    assert cases[0].robots == "user-agent: FooBot\ndisallow: /\n"
    assert cases[1].robots == "user-agent: *\ndisallow: /x/aaa\n"


def test_python_suite_counts_each_assert_about_a_decision():
    suite = rc.PythonSuite(PY, "shapes.py")
    n, held, failed = suite.run(rc.protego_decides)
    assert (n, held, failed) == (5, 5, [])
    # a decider that always allows fails the asserts expecting a refusal
    n, held, failed = suite.run(lambda robots, url, agent: True)
    assert (n, held) == (5, 3) and len(failed) == 2


def test_the_crawler_is_scored_on_a_case_suite():
    suite = rc.CaseSuite(rc.google_cases(CPP))
    assert suite.run(rc.crawler_decides)[:2] == (3, 3)
