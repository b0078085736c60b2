"""Old name of pipelines.settings, kept for scripts that import ROUND_SETTINGS from here."""
from pipelines.settings import DEFAULT_USER_AGENT, ROUND_SETTINGS  # noqa: F401
