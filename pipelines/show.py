"""Print the latest WARC capture of a URL from a crawl directory, without scanning a WARC.

    beamcrawl show --crawl_dir D URL [--headers_only] [--raw]

The newest committed round whose CDXJ index (rounds/N/warc/index.cdxj) has the URL's SURT
key gives the file, offset and length of its response record; that one gzip member is
read and printed: status line, headers as received, a blank line, then the body (decoded
from its Content-Encoding unless --raw). A URL never captured is one line on stderr and
exit status 2, as is a bad command line or crawl directory.
"""
import io
import sys

# pipelines.cli first: it quiets the log lines Beam prints while it is imported
from pipelines import cli
from pipelines.crawldir import CrawlDir, CrawlStateError
from pipelines.settings import COMMAND_FLAGS, USAGE, UsageError
from transforms.archive.warc import lookup


def _parser():
    parser = cli.FlagParser(prog="beamcrawl show", description=USAGE["show"], allow_abbrev=False,
                            usage="beamcrawl show --crawl_dir DIR URL [--headers_only] [--raw]")
    for setting in COMMAND_FLAGS["show"]:
        if setting.type is cli.parse_bool:   # plain switches: `--headers_only URL` keeps its URL
            parser.add_argument(setting.flag, dest=setting.name, action="store_true",
                                help=f"{setting.help} (default: off)")
        else:
            cli._add_flag(parser, setting)
    parser.add_argument("url", metavar="URL", help="The URL whose latest capture to print.")
    return parser


def _read_index(path):
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read().decode("utf-8").splitlines()


def latest_capture(crawl, url):
    """(round, CDXJ fields) of `url`'s latest capture, or None."""
    for n in reversed(crawl.committed_rounds()):
        index = crawl.warc_index(n)
        if index is None:
            continue
        try:
            found = lookup(_read_index(index), url)
        except Exception as e:
            raise CrawlStateError(f"{index}: cannot read this CDXJ index ({type(e).__name__}: {e}); "
                                  "restore it from a backup.") from e
        if found:
            return n, sorted(found, key=lambda f: f[0])[-1][1]
    return None


def read_capture(crawl, round_no, fields):
    """The response record at the index entry's file, offset and length (warcio record)."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems
    from warcio.archiveiterator import ArchiveIterator
    path = FileSystems.join(crawl.warc_dir(round_no), fields["filename"])
    try:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            f.seek(int(fields["offset"]))
            data = f.read(int(fields["length"]))
        record = next(iter(ArchiveIterator(io.BytesIO(data))))
    except Exception as e:
        raise CrawlStateError(f"{path}: cannot read the record at offset {fields['offset']} "
                              f"({type(e).__name__}: {e}); the WARC file is missing or damaged.") from e
    return record


def render(record, headers_only=False, raw=False) -> bytes:
    h = record.http_headers
    head = f"{h.protocol} {h.statusline}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.headers) + "\r\n"
    out = head.encode("latin-1", "replace")
    if not headers_only:
        out += (record.raw_stream if raw else record.content_stream()).read()
    return out


def run_show(argv):
    args, beam_argv = cli.parse_with_beam_flags(_parser(), argv)
    url = args.url.strip()
    crawl = CrawlDir(args.crawl_dir or "")
    if not args.crawl_dir:
        raise UsageError("--crawl_dir is required (see `beamcrawl show --help`)")
    cli.use_storage(args.crawl_dir, beam_argv)   # --s3_* flags (pipelines.storage)
    crawl.read_config()
    found = latest_capture(crawl, url)
    if found is None:
        raise UsageError(f"{url} was never captured in {crawl.path} (no WARC index entry; "
                         "rounds run with --store parquet or none keep no WARC)")
    return render(read_capture(crawl, *found), args.headers_only, args.raw)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        out = run_show(argv)
    except SystemExit as e:   # --help
        return e.code or 0
    except (UsageError, CrawlStateError) as e:
        print(f"error: {cli.one_line(e)}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
