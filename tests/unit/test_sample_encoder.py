"""The recorder's sample encoder against the sample table's: the same record for every sample
the probes could hand it, key for key, value for value, type for type (an int is not a float
in a run file), and the same error where the table's encoder raises one."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devicewatch.runformat.encode import SampleEncoder
from devicewatch.runformat.schema import Encoder
from devicewatch.runformat.writer import probe_fields

DECLARED = probe_fields()

numbers = st.one_of(
    st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-1e6, 1e6).map(lambda x: round(x, 3)),   # tenths and ties, as the probes give them
    st.sampled_from([0.05, 0.15, 0.25, 2.5, -0.5, 1e16, 2.0**63, -0.0]),
)
values = st.one_of(numbers, st.none(), st.booleans(), st.text(max_size=3))
finite = st.one_of(st.integers(0, 2**40), st.floats(0, 1e12), st.none())


def named(names, strategy):
    """A dict of some of NAMES (and maybe one the fields do not list)."""
    return st.dictionaries(st.sampled_from([*names, "other"]), strategy)


gpu_entry = st.one_of(
    st.none(),
    st.integers(),
    st.fixed_dictionaries({}, optional={
        **{name: values for name in DECLARED["fields"]["gpu"]},
        "util_samples": st.lists(st.tuples(st.floats(0, 100), st.one_of(st.floats(0, 100), st.integers(0, 100))),
                                 max_size=3),
        "procs": st.lists(st.one_of(named(DECLARED["fields"]["gpu_proc"], finite), st.none()), max_size=3),
        "mig": st.lists(st.one_of(st.dictionaries(st.sampled_from(["gi", "util"]), st.integers(0, 9)), st.integers()),
                        max_size=2),
    }),
)

records = st.fixed_dictionaries(
    {"t": st.floats(0, 1e6, allow_nan=False)},
    optional={
        "type": st.just("sample"),
        "cpu": st.one_of(st.lists(values, max_size=6), st.none(), st.text(max_size=2)),
        "cpu_total": values,
        "freq_mhz": values,
        "mem": st.one_of(named(["used", "total", "swap_used", "swap_total"], values), st.integers()),
        "mem_used": values,   # beside the nested one: the nested one wins
        "proc": st.one_of(st.none(), named(DECLARED["fields"]["proc"], values), st.lists(st.integers(), max_size=2)),
        "gpus": st.one_of(st.lists(gpu_entry, max_size=3), st.none(), st.integers()),
        "gpus_t": values,
        "recorder_cpu": values,
        "watcher_cpu": values,
        "cpu_mhz": st.one_of(st.lists(values, max_size=4), st.none(), st.floats()),
        "host": st.one_of(st.text(max_size=4), st.none(), st.integers()),
    },
)


def outcome(encoder, record):
    """The record as encoded, written with each value's type; or the error's type."""
    try:
        return repr(encoder.encode(record))
    except Exception as exc:   # the table's own errors (a NaN to be scaled, say) must be the same
        return type(exc).__name__


def encoders(declared):
    args = declared["fields"], declared["scale"], declared.get("digits")
    return Encoder(*args), SampleEncoder(*args)


@settings(max_examples=400, deadline=None)
@given(records)
def test_the_recorder_encodes_every_sample_as_the_table_does(record):
    table, recorder = encoders(DECLARED)
    assert recorder._fast   # the table's line order is the one the recorder's encoder writes in
    assert outcome(recorder, record) == outcome(table, record)


# Fields whose names a nested reading can give two ways (``mem_swap_used``: ``mem`` →
# ``swap_used`` or ``mem_swap`` → ``used``), with scales and decimals of every kind.
AMBIGUOUS = {"fields": {"sys": ["mem_swap_used", "a_b_c", "plain", "freq_mhz"], "proc": ["cpu", "rss"],
                        "gpu": ["util", "power_w"], "gpu_proc": ["pid", "mem"]},
             "scale": {"sys": [1048576, 1, 10, 1], "proc": [1, 1024], "gpu": [1, 1], "gpu_proc": [1, 1048576]},
             "digits": {"sys": [1, 2, 0, 3], "proc": [1, 1], "gpu": [1, 0], "gpu_proc": [1, 1]}}


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["mem", "mem_swap", "a", "a_b", "mem_swap_used", "a_b_c", "plain",
                                        "freq_mhz", "freq"]),
                       st.one_of(values, st.dictionaries(st.sampled_from(["swap_used", "used", "b_c", "c", "mhz"]),
                                                         values)), max_size=6),
       st.floats(0, 100))
def test_a_field_found_two_ways_is_found_where_the_table_finds_it(readings, t):
    table, recorder = encoders(AMBIGUOUS)
    record = {"t": t, "cpu": [1.0], **readings}
    assert outcome(recorder, record) == outcome(table, record)


@pytest.mark.parametrize("first", ["mem", "mem_swap"])
def test_of_two_nested_readings_the_later_in_the_record_wins(first):
    """``mem_swap_used`` given as ``mem`` → ``swap_used`` (3 MiB) and as ``mem_swap`` → ``used``
    (5 MiB): the table's ``flat`` takes the one whose key comes later in the record."""
    table, recorder = encoders(AMBIGUOUS)
    nested = {"mem": {"swap_used": 3 * 1048576}, "mem_swap": {"used": 5 * 1048576}}
    second = "mem_swap" if first == "mem" else "mem"
    record = {"t": 0.0, "cpu": [], first: nested[first], second: nested[second]}
    expected = 5 if second == "mem_swap" else 3
    assert table.encode(record)["sys"][0] == expected
    assert recorder.encode(record)["sys"][0] == expected


def test_the_common_values_are_stored_as_the_header_says():
    """Worked by hand: memory in MiB rounded, a tenth kept, a whole float written as an int,
    a NaN as null, a core's percent whole."""
    _, recorder = encoders(DECLARED)
    sys_fields = DECLARED["fields"]["sys"]
    assert sys_fields[:2] == ["freq_mhz", "mem_used"]
    record = {"t": 1.5, "cpu": [12.6, 99.5, math.nan], "freq_mhz": 2445.0,
              "mem": {"used": 3 * 1048576 + 524289, "swap_used": 0, "swap_total": 0},
              "proc": {"cpu": 12.34, "rss": 5 * 1048576, "threads": 3, "count": 1, "cpu_wait": math.nan},
              "recorder_cpu": 0.25}
    encoded = recorder.encode(record)
    assert list(encoded) == ["type", "t", "cpu", "sys", "proc", "recorder_cpu"]
    assert encoded["cpu"] == [13, 100, None]
    assert repr(encoded["sys"][:2]) == "[2445, 4]"   # 3.5 MiB and a byte: 4
    assert repr(encoded["proc"][:4]) == "[12.3, 5, 3, 1]" and encoded["proc"][4] is None
    assert repr(encoded["recorder_cpu"]) == "0.2"    # Python's round: 0.25 is stored a shade under


def test_a_sample_without_a_time_is_refused_as_the_table_refuses_it():
    table, recorder = encoders(DECLARED)
    with pytest.raises(KeyError):
        table.encode({"cpu": []})
    with pytest.raises(KeyError):
        recorder.encode({"cpu": []})
