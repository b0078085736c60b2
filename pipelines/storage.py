"""Where the crawl directory lives: Beam's filesystem options in this process, checked.

Every crawl-directory read and write goes through Beam's `FileSystems`, which takes the
options of a remote filesystem (S3's endpoint, keys, region: `--s3_endpoint_url`,
`--s3_access_key_id`, `--s3_secret_access_key`, `--s3_region_name`, ...) from
`FileSystems.set_options`. Beam calls that when a pipeline is built; a command reads the
crawl directory before that (crawl.json, the committed rounds), and `report`, `show` and
the notebooks build no pipeline at all. So every entry point calls `use(beam_argv)` first
and `check(crawl_dir)` before anything is written: an s3:// directory without a reachable
bucket or credentials is one line naming what to give. Options not given fall back to
boto3's own (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL,
AWS_DEFAULT_REGION, ~/.aws). Worker processes get the same options from their runner
(pipelines.daskrunner for Dask; Beam's SDK workers from the pipeline options).
"""
import os
import shlex

from pipelines import s3clients
from pipelines.settings import UsageError

ENV_FLAGS = "BEAMCRAWL_STORAGE_FLAGS"   # Beam flags for notebooks and scripts (no command line)


def use(beam_argv=()):
    """Beam's PipelineOptions of `beam_argv` (flags, or PipelineOptions as they are), set as
    this process's filesystem options."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions
    options = beam_argv if isinstance(beam_argv, PipelineOptions) else PipelineOptions(list(beam_argv))
    FileSystems.set_options(options)
    s3clients.install()
    return options


def use_environment():
    """`use` with the Beam flags in $BEAMCRAWL_STORAGE_FLAGS (e.g. "--s3_endpoint_url
    http://127.0.0.1:9000"), for notebooks and scripts that have no command line."""
    return use(shlex.split(os.environ.get(ENV_FLAGS, "")))


def open_crawl(path):
    """The crawl directory at `path`, with the filesystem options of the environment
    (`use_environment`) set and `path` checked: what a notebook opens a crawl with."""
    from pipelines.crawldir import CrawlDir
    check(path, use_environment())
    return CrawlDir(path)


def _s3_settings(options):
    from apache_beam.options.pipeline_options import S3Options
    return options.view_as(S3Options)


def _s3_client(s3):
    import boto3
    from botocore.config import Config
    return boto3.session.Session().client(
        "s3", endpoint_url=s3.s3_endpoint_url, region_name=s3.s3_region_name,
        aws_access_key_id=s3.s3_access_key_id, aws_secret_access_key=s3.s3_secret_access_key,
        aws_session_token=s3.s3_session_token, use_ssl=not s3.s3_disable_ssl, verify=s3.s3_verify,
        config=Config(connect_timeout=10, read_timeout=30, retries={"max_attempts": 2}))


def _check_s3(path, options):
    """One look at the bucket of an s3:// crawl directory with the options given."""
    try:
        import boto3  # noqa: F401
    except ImportError:
        raise UsageError(f"--crawl_dir {path}: S3 needs boto3, which is not installed; "
                         "`pip install apache-beam[aws]`") from None
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
    s3 = _s3_settings(options)
    bucket = path[len("s3://"):].split("/", 1)[0]
    where = f"at {s3.s3_endpoint_url}" if s3.s3_endpoint_url else "on AWS (no --s3_endpoint_url)"
    try:
        _s3_client(s3).head_bucket(Bucket=bucket)
    except NoCredentialsError:
        raise UsageError(f"--crawl_dir {path}: no S3 credentials; give --s3_access_key_id and "
                         "--s3_secret_access_key (or set AWS_ACCESS_KEY_ID and "
                         "AWS_SECRET_ACCESS_KEY)") from None
    except ClientError as e:
        code = str(e.response.get("Error", {}).get("Code", "")) or str(
            e.response.get("ResponseMetadata", {}).get("HTTPStatusCode"))
        if code in ("404", "NoSuchBucket"):
            why = "the bucket does not exist; create it first"
        elif code in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            why = "access denied; check --s3_access_key_id and --s3_secret_access_key"
        else:
            why = f"the server answered {code}"
        raise UsageError(f"--crawl_dir {path}: bucket {bucket!r} {where}: {why}") from None
    except (BotoCoreError, ValueError) as e:
        raise UsageError(f"--crawl_dir {path}: cannot reach S3 {where} ({type(e).__name__}: "
                         f"{' '.join(str(e).split())}); check --s3_endpoint_url") from None


def check(path, options):
    """A UsageError (one line) if the crawl directory `path` cannot be used with `options`:
    no Beam filesystem for its scheme, or an S3 bucket that cannot be reached."""
    from apache_beam.io.filesystems import FileSystems
    scheme = FileSystems.get_scheme(path)
    if scheme is None:
        return
    try:
        FileSystems.get_filesystem(path)
    except ValueError:
        extra = {"gs": "gcp", "s3": "aws", "azfs": "azure"}.get(scheme)
        hint = f"`pip install apache-beam[{extra}]`" if extra else "use a local path, gs://, s3:// or hdfs://"
        raise UsageError(f"--crawl_dir {path}: no Beam filesystem for {scheme}:// is installed; {hint}") from None
    if scheme == "s3":
        _check_s3(path, options)
