"""The SSE reader takes captures as clients saved them, and reports what a client would have dropped."""

from __future__ import annotations

from accord.replay.sse import SseFrame, parse_sse


def test_frames_split_on_blank_lines_with_event_names() -> None:
    cap = parse_sse('event: a\ndata: {"x":1}\n\nevent: b\ndata: 2\n\n')
    assert cap.frames == [SseFrame("a", '{"x":1}'), SseFrame("b", "2")]
    assert cap.partial is None


def test_crlf_and_bare_cr_line_ends_are_line_ends() -> None:
    """Servers behind some proxies send CRLF; old Macs' CR is legal SSE too."""
    assert parse_sse("data: 1\r\n\r\ndata: 2\r\rdata: 3\n\n").frames == [
        SseFrame(None, "1"),
        SseFrame(None, "2"),
        SseFrame(None, "3"),
    ]


def test_comments_are_counted_not_dispatched() -> None:
    cap = parse_sse(": keepalive\n\ndata: 1\n: inside\n\n")
    assert cap.frames == [SseFrame(None, "1")]
    assert cap.comments == 2


def test_multi_line_data_joins_with_newlines_and_one_leading_space_goes() -> None:
    cap = parse_sse('data: {\ndata:  "a": 1\ndata:}\n\n')
    assert cap.frames == [SseFrame(None, '{\n "a": 1\n}')]


def test_unicode_line_separators_inside_data_do_not_split() -> None:
    """Model text in a JSON string may hold a raw U+2028; str.splitlines would cut the event there."""
    data = '{"delta":"a\u2028b\x1cc\x85d"}'
    assert parse_sse(f"data: {data}\n\n").frames == [SseFrame(None, data)]


def test_frames_without_data_and_unknown_fields_are_ignored() -> None:
    assert parse_sse("event: ping\n\nid: 7\nretry: 10\nfoo\ndata: x\n\n").frames == [SseFrame(None, "x")]


def test_curl_include_preamble_is_skipped_and_its_status_kept() -> None:
    text = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\r\n\r\n"
    cap = parse_sse(text)
    assert cap.http_status == 200
    assert cap.headers["content-type"] == "text/event-stream"
    assert cap.frames == [SseFrame(None, "1")]


def test_a_body_ending_inside_a_frame_keeps_that_frame_apart() -> None:
    """A client never dispatches a frame without its blank line; the audit must know what was lost."""
    cap = parse_sse("data: 1\n\nevent: last\ndata: 2\n")
    assert cap.frames == [SseFrame(None, "1")]
    assert cap.partial == SseFrame("last", "2")


def test_byte_order_mark_and_done_marker_are_read_as_given() -> None:
    cap = parse_sse("\ufeffdata: 1\n\ndata: [DONE]\n\n")
    assert cap.frames == [SseFrame(None, "1"), SseFrame(None, "[DONE]")]
