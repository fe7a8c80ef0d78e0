"""The run format: what a run file holds and the one way to write and read it.

``runfile`` is the journal (one JSON record a line; its writer, its reader, its follower),
``header`` the typed header record, ``samples`` the sample table (every column's wire key,
probe field, dtype and shape) with the codecs derived from it, ``columnar`` the memory-mapped
form of a finished run, ``downsample`` the one downsampler, ``records`` the builders of every
other record. Nothing here knows the recorder, the analysis or any view.
"""
