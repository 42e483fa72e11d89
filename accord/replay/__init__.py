"""accord.replay: audit captured streams, record traffic, trace and replay responses, fuzz the chain.

Only the audit's names are re-exported: they are pure (msgspec only). The proxy, traces, replay and
fuzzing pull in the server, the store and Hypothesis, so they are imported from their modules.
"""

from accord.replay.audit import audit_events, audit_file, audit_path, audit_text
from accord.replay.census import Census, take_census
from accord.replay.defects import DEFECT_CLASSES, DefectClass
from accord.replay.verdict import Defect, Verdict

__all__ = [
    "DEFECT_CLASSES",
    "Census",
    "Defect",
    "DefectClass",
    "Verdict",
    "audit_events",
    "audit_file",
    "audit_path",
    "audit_text",
    "take_census",
]
