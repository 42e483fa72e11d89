"""The vocabulary and the log. Pure: no I/O, no clock, no event loop."""

from accord.events.generation import Chunk, EngineFailed, Finished, GenerationOutput
from accord.events.items import OutputItem, Usage
from accord.events.response import ResponseEvent, Snapshot, fold
from accord.events.wire import EventLog, WireEvent, project

__all__ = [
    "Chunk",
    "EngineFailed",
    "EventLog",
    "Finished",
    "GenerationOutput",
    "OutputItem",
    "ResponseEvent",
    "Snapshot",
    "Usage",
    "WireEvent",
    "fold",
    "project",
]
