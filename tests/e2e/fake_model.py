"""A fake model server on 127.0.0.1 for the end-to-end suite.

Speaks three wire formats: Anthropic Messages (`POST /v1/messages`, SSE or JSON), OpenAI
Responses (`POST /v1/responses`, SSE) and Chat Completions (`POST /v1/chat/completions`,
SSE or JSON). Every request body is appended to a JSONL log. A script file (JSON, re-read
on every request so a test can change it between client runs) makes it call tools:

    {"commands": ["memwiki retrieve 'x'", ...], "final": "done"}

For each request the server counts the tool results already in the conversation: while
that is below len(commands) it answers with one shell tool call running the next command
(in the shell tool the client offered); after that it answers with the final text.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Shell-like tools the clients offer, in preference order, and how each takes its command.
SHELL_TOOLS = ("Bash", "exec_command", "shell", "terminal", "exec", "bash", "shell_command")


def _tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        if isinstance(fn.get("name"), str):
            names.append(fn["name"])
    return names


def _tool_schema(body: dict[str, Any], name: str) -> dict[str, Any]:
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        if fn.get("name") == name:
            return fn.get("input_schema") or fn.get("parameters") or {}
    return {}


def shell_call(body: dict[str, Any], command: str) -> tuple[str, dict[str, Any]] | None:
    """(tool name, arguments) for a shell call in the tool set the client offered."""
    names = _tool_names(body)
    for want in SHELL_TOOLS:
        if want in names:
            props = _tool_schema(body, want).get("properties", {})
            if "cmd" in props:
                return want, {"cmd": command}
            if props.get("command", {}).get("type") == "array":
                return want, {"command": ["bash", "-lc", command]}
            return want, {"command": command}
    return None


def count_tool_results(body: dict[str, Any]) -> int:
    """How many tool results the conversation in this request already holds."""
    n = 0
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        if msg.get("role") == "tool":
            n += 1
        content = msg.get("content")
        if isinstance(content, list):
            n += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    for item in body.get("input") or [] if isinstance(body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type", "").endswith("call_output"):
            n += 1
    return n


class State:
    """Where the server logs and reads its script."""

    def __init__(self, log: Path, script: Path):
        self.log = log
        self.script = script
        self.lock = threading.Lock()
        self.counter = 0

    def next_id(self) -> int:
        with self.lock:
            self.counter += 1
            return self.counter

    def record(self, path: str, body: Any) -> None:
        with self.lock, self.log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"t": time.time(), "path": path, "body": body}) + "\n")

    def plan(self, body: dict[str, Any]) -> tuple[str, Any]:
        """("tool", (name, args)) or ("text", final text) for this request."""
        try:
            script = json.loads(self.script.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            script = {}
        commands = script.get("commands", [])
        done = count_tool_results(body)
        if done < len(commands):
            step = commands[done]
            if isinstance(step, dict):
                # {"tool": name, "input": {...}, "when": text the request must hold}
                if step["tool"] in _tool_names(body) and step.get("when", "") in json.dumps(body):
                    return "tool", (step["tool"], step["input"])
            else:
                call = shell_call(body, step)
                if call is not None:
                    return "tool", call
        return "text", script.get("final", "Done.")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send_json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def _event(self, name: str | None, data: Any) -> None:
        payload = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        self.wfile.write(f"{head}data: {payload}\n\n".encode())
        self.wfile.flush()

    def do_GET(self) -> None:
        self.state.record(self.path, None)
        if self.path.rstrip("/").endswith("/models"):
            self._send_json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        else:
            self._send_json({"ok": True})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        self.state.record(self.path, body)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/messages/count_tokens"):
            return self._send_json({"input_tokens": 100})
        if path.endswith("/messages"):
            return self._anthropic(body)
        if path.endswith("/responses"):
            return self._responses(body)
        if path.endswith("/chat/completions"):
            return self._chat(body)
        self._send_json({"error": {"message": f"unknown path {path}"}}, 404)

    # Anthropic Messages ------------------------------------------------------------------
    def _anthropic(self, body: dict[str, Any]) -> None:
        kind, what = self.state.plan(body)
        n = self.state.next_id()
        if kind == "tool":
            name, args = what
            block = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": name, "input": args}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": what}
            stop = "end_turn"
        usage = {"input_tokens": 10, "output_tokens": 5}
        msg = {
            "id": f"msg_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return self._send_json(msg)
        self._start_sse()
        self._event(
            "message_start",
            {"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}},
        )
        if kind == "tool":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        self._event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": start},
        )
        self._event(
            "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        )
        self._event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self._event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
        self._event("message_stop", {"type": "message_stop"})

    # OpenAI Responses --------------------------------------------------------------------
    def _responses(self, body: dict[str, Any]) -> None:
        kind, what = self.state.plan(body)
        n = self.state.next_id()
        if kind == "tool":
            name, args = what
            item = {
                "type": "function_call",
                "id": f"fc_{n:04d}",
                "call_id": f"call_{n:04d}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        else:
            item = {
                "type": "message",
                "id": f"msg_{n:04d}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": what, "annotations": []}],
            }
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        resp = {
            "id": f"resp_{n:04d}",
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model", "fake"),
            "status": "in_progress",
            "output": [],
        }
        self._start_sse()
        self._event("response.created", {"type": "response.created", "response": resp})
        self._event(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        )
        if kind == "text":
            self._event(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": what,
                },
            )
        self._event(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        )
        done = {**resp, "status": "completed", "output": [item], "usage": usage}
        self._event("response.completed", {"type": "response.completed", "response": done})

    # Chat Completions --------------------------------------------------------------------
    def _chat(self, body: dict[str, Any]) -> None:
        kind, what = self.state.plan(body)
        n = self.state.next_id()
        if kind == "tool":
            name, args = what
            call = {
                "id": f"call_{n:04d}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": what}
            finish = "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        base = {
            "id": f"chatcmpl-{n:04d}",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
        }
        if not body.get("stream"):
            return self._send_json(
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            )
        self._start_sse()
        chunk = {**base, "object": "chat.completion.chunk"}
        if kind == "tool":
            delta = {"role": "assistant", "content": None, "tool_calls": [{"index": 0, **call}]}
        else:
            delta = {"role": "assistant", "content": what}
        self._event(
            None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        )
        self._event(
            None,
            {
                **chunk,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                "usage": usage,
            },
        )
        self._event(None, "[DONE]")


def serve(log: Path, script: Path, port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start the server on 127.0.0.1 (a free port when 0) in a daemon thread."""
    state = State(log, script)
    handler = type("BoundHandler", (Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def logged(log: Path) -> list[dict[str, Any]]:
    """Every logged request, in order."""
    if not log.exists():
        return []
    return [
        json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
