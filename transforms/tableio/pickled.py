"""A spill file's element encoding (pickle), in a module without Beam: a page worker, which
never imports Beam, encodes the link bundles it knows are spilled (`tableio.spill`)."""
import pickle


def encode(element) -> bytes:
    return pickle.dumps(element, protocol=pickle.HIGHEST_PROTOCOL)


class Pickled(bytes):
    """An element already `encode`d where it was made: a spill writer takes its bytes as
    they are (a page worker encodes the link bundles it knows are spilled, so the round's
    process neither unpickles nor pickles them again); `read_spill` gives the element."""
