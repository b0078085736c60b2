"""Arrow schemas of the crawl directory's tables (see schemas.tables)."""
from schemas.tables import *  # noqa: F401,F403
