"""The recorder: launch a workload, sample the machine, collect events and output, write the run file.

``recorder.py`` holds the coordinator; each of its parts is a module of its own (see there).
"""

from .bound import Drops, RateBound
from .event_channel import EVENT_BURST, EVENT_RATE, EventChannel
from .gpu_sampler import GpuSampler, gpu_poll_period
from .options import INTERVAL_RANGE, RecordOptions, check_interval, record_argv
from .output import LOG_BURST, LOG_RATE, MAX_LOG_LINE, OutputPump
from .recorder import CANCELLED, TERMINAL_CLOSED, Recorder, claim, record
from .stdout_epochs import StdoutEpochs
from .terminal import Terminal
from .workload import Workload

__all__ = [
           "CANCELLED",
           "EVENT_BURST",
           "EVENT_RATE",
           "INTERVAL_RANGE",
           "LOG_BURST",
           "LOG_RATE",
           "MAX_LOG_LINE",
           "TERMINAL_CLOSED",
           "Drops",
           "EventChannel",
           "GpuSampler",
           "OutputPump",
           "RateBound",
           "RecordOptions",
           "Recorder",
           "StdoutEpochs",
           "Terminal",
           "Workload",
           "check_interval",
           "claim",
           "gpu_poll_period",
           "record",
           "record_argv",
]
