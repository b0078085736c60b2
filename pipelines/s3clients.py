"""One boto3 S3 client per process for Beam's S3 filesystem, not one per call.

Beam 2.77's `S3FileSystem` builds a new `S3IO` for every call (exists, open, match,
delete ...), and each builds a new boto3 session and client, which loads and parses
botocore's JSON service models again: 111 clients in one round of the small simulated web
on s3://, 47 of the round's 60 s (cProfile; the same round on local disk takes ~7 s).
boto3's low-level clients are thread-safe and meant to be shared; Beam's wrapper around
one (`boto3_client.Client`) is not (it keeps the open download's stream), so each `S3IO`
still gets its own wrapper, around the one client of its options.

`install()` replaces `boto3_client.Client` in this process (idempotent) on the Beam version
it was written for; on another it says so in one warning line and Beam's own class stays
(slower, same result). The drivers install it (pipelines.storage.use) and so does the Dask
runner on its workers (pipelines.daskrunner).
"""
import logging
import threading

BEAM_VERSION = "2.77.0"
LOG = logging.getLogger("beamcrawl.s3clients")
_LOCK = threading.Lock()   # guards the first client of a set of options per process
_CLIENTS = {}              # options -> boto3 client; one per process, like a connection pool
_OPTION_NAMES = ("s3_access_key_id", "s3_secret_access_key", "s3_session_token", "s3_endpoint_url",
                 "s3_disable_ssl", "s3_region_name", "s3_api_version", "s3_verify")


def _settings(options):
    from apache_beam.options.pipeline_options import PipelineOptions, S3Options
    if isinstance(options, PipelineOptions):
        s3 = options.view_as(S3Options)
        return tuple(getattr(s3, name) for name in _OPTION_NAMES)
    return tuple(options.get(name) for name in _OPTION_NAMES)


def shared_client(options):
    """The process's boto3 S3 client for `options` (PipelineOptions or Beam's dict form)."""
    key = _settings(options)
    client = _CLIENTS.get(key)
    if client is None:
        with _LOCK:
            client = _CLIENTS.get(key)
            if client is None:
                import boto3
                access, secret, token, endpoint, no_ssl, region, api, verify = key
                client = boto3.session.Session().client(
                    service_name="s3", region_name=region, api_version=api, use_ssl=not no_ssl,
                    verify=verify, endpoint_url=endpoint, aws_access_key_id=access,
                    aws_secret_access_key=secret, aws_session_token=token)
                _CLIENTS[key] = client
    return client


def install():
    """Beam's S3 filesystem shares one boto3 client per set of options in this process."""
    try:
        import apache_beam
        from apache_beam.io.aws.clients.s3 import boto3_client
    except ImportError:   # no apache-beam[aws]: no S3 filesystem to speed up
        return
    beam_client = boto3_client.Client
    if getattr(beam_client, "shares_clients", False):
        return
    if apache_beam.__version__ != BEAM_VERSION or not hasattr(beam_client, "get_stream"):
        LOG.warning("Beam %s's S3 client is left as it is (one boto3 client per call, slower): "
                    "pipelines/s3clients.py was written for Beam %s", apache_beam.__version__, BEAM_VERSION)
        return

    class SharedClient(beam_client):
        """Beam's S3 client wrapper around the process's shared boto3 client."""
        shares_clients = True

        def __init__(self, options):   # noqa: D107 - Beam's __init__ less the client it builds
            self.client = shared_client(options)
            self._download_request = None
            self._download_stream = None
            self._download_pos = 0

        def complete_multipart_upload(self, request):
            """An empty file (e.g. a round's index.cdxj when it archived nothing) has no part,
            and S3 refuses to complete an upload of none (MalformedXML): Beam's writer then
            fails the round. It is stored with one PUT of no bytes instead."""
            if request.parts:
                return super().complete_multipart_upload(request)
            from apache_beam.io.aws.clients.s3 import messages
            try:
                self.client.put_object(Bucket=request.bucket, Key=request.object, Body=b"")
                self.client.abort_multipart_upload(Bucket=request.bucket, Key=request.object,
                                                   UploadId=request.upload_id)
            except Exception as e:
                raise messages.S3ClientError(str(e), boto3_client.get_http_error_code(e))

    SharedClient.__name__ = SharedClient.__qualname__ = "Client"
    boto3_client.Client = SharedClient
