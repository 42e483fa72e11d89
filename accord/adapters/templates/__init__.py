"""Chat-template rendering (sandboxed jinja2) and model profiles."""

from ._dicts import message_dict, tool_dicts
from ._loading import TemplateFiles, load_chat_template, load_template_files
from ._plain import render_plain
from ._profiles import PROFILES, Profile, detect_family, profile_names, resolve_profile
from ._render import PROBE, PromptRenderer, TemplateTraits

__all__ = [
    "PROBE",
    "PROFILES",
    "Profile",
    "PromptRenderer",
    "TemplateFiles",
    "TemplateTraits",
    "detect_family",
    "load_chat_template",
    "load_template_files",
    "message_dict",
    "profile_names",
    "render_plain",
    "resolve_profile",
    "tool_dicts",
]
