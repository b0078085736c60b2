"""Which Parquet columns may be dictionary-encoded when a table is written (`WriteTable`).

Columns of random hash values (a page's MinHash, its LSH band keys) get none: Parquet builds
a dictionary for each column chunk, outgrows it and falls back to plain, for a few bytes.
Without it a 4 970-row bench50k VISITED table wrote in 15.1 instead of 27.4 ms (best of 9),
its file 5 % larger (2 962 against 2 812 KB: some values repeat across near-duplicates).
"""
import pyarrow as pa

NO_DICTIONARY = frozenset({"minhash", "lsh_keys"})


def _leaf_paths(name, type_):
    """Parquet's column paths under an Arrow field (lists as "name.list.element", structs
    by their children's names, maps as "name.key_value.key" and ".value")."""
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return _leaf_paths(f"{name}.list.element", type_.value_type)
    if pa.types.is_map(type_):
        return (_leaf_paths(f"{name}.key_value.key", type_.key_type)
                + _leaf_paths(f"{name}.key_value.value", type_.item_type))
    if pa.types.is_struct(type_):
        return [p for i in range(type_.num_fields)
                for p in _leaf_paths(f"{name}.{type_.field(i).name}", type_.field(i).type)]
    return [name]


def dictionary_columns(schema):
    """The leaf column paths of `schema` Parquet may dictionary-encode: all but those under
    NO_DICTIONARY."""
    return [path for field in schema if field.name not in NO_DICTIONARY
            for path in _leaf_paths(field.name, field.type)]
