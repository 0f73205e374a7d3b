"""Loopback servers that speak the OpenAI chat-completions and Anthropic messages
wire formats, with scriptable faults, for the backend tests and bench/concurrency.py."""

from tests.servers.anthropic_server import AnthropicApp, tool_responder
from tests.servers.faults import Fault, Script
from tests.servers.http import LoopbackServer, Reply, Request
from tests.servers.openai_server import OpenAIApp, react_responder

__all__ = ["AnthropicApp", "Fault", "LoopbackServer", "OpenAIApp", "Reply", "Request", "Script",
           "react_responder", "tool_responder"]
