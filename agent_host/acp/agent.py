"""The ACP agent: one handler per method the SDK routes, each validating what the
schema cannot, calling the session service and converting its answer.

Sessions of several folders live side by side (the service keeps a host per
folder); approval policies are offered as session modes, rewinding as slash
commands and ``_agent-host/*`` extension methods.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client
from acp import schema as s
from acp.helpers import update_agent_message_text, update_current_mode

from .. import __version__
from ..service import SessionService
from ..session.approval import APPROVALS
from ..session.environment import EnvironmentPolicy, ShellEnvironmentError
from ..session.errors import AgentHostError, SandboxConfigError
from ..session.providers import limits
from ..session.providers.errors import ModelConfigError
from ..session.providers.limits import SETTINGS as LIMIT_SETTINGS
from ..session.providers.registry import EXAMPLE_MODELS
from ..session.sandbox import SandboxPolicy
from ..session.tasks import run_task
from . import auth, commands, convert, extensions, wire
from .errors import answers, invalid_params
from .port import AcpPort

log = logging.getLogger(__name__)

META_KEY = "agent-host"
"""Our key in ``_meta``: the extension methods we offer, the options we take."""
MODEL_OPTION = "model"
SANDBOX_OPTION = "sandbox"
SANDBOX_CHOICES = {
    "workspace-write": "Sandbox: write the workspace only, no network",
    "read-only": "Sandbox: write nothing (a private temp only), no network",
    "full": "No sandbox: commands run as you",
}
COMMON_MODELS = EXAMPLE_MODELS

LIST_PAGE = 50
"""Sessions per session/list page."""

MODES = [
    s.SessionMode(id="ask", name="Ask", description="Ask before edits and commands"),
    s.SessionMode(id="auto-edit", name="Auto-edit", description="Edit freely, ask before commands"),
    s.SessionMode(id="auto", name="Auto", description="Run everything without asking"),
    s.SessionMode(id="read-only", name="Read-only", description="Refuse edits and commands"),
]


class AcpAgent:
    def __init__(self, service: SessionService, port: AcpPort) -> None:
        self.service = service
        self.port = port
        self._tasks: set[asyncio.Task[None]] = set()
        self._models: dict[str, str] = {}
        """A model chosen with set_config_option, until the next prompt takes it."""

    def on_connect(self, conn: Client) -> None:
        self.port.conn = conn

    @answers
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: s.ClientCapabilities | None = None,
        client_info: s.Implementation | None = None,
        **kwargs: Any,
    ) -> s.InitializeResponse:
        # Sessions' workspaces read them at call time: fs/* and terminal/* delegation.
        self.port.client_capabilities = client_capabilities
        self._configure(kwargs.get(META_KEY))
        session = s.SessionCapabilities(
            list=s.SessionListCapabilities(),
            fork=s.SessionForkCapabilities(),
            resume=s.SessionResumeCapabilities(),
            close=s.SessionCloseCapabilities(),
            delete=s.SessionDeleteCapabilities(),
        )
        capabilities = s.AgentCapabilities(
            load_session=True,
            prompt_capabilities=s.PromptCapabilities(embedded_context=True, image=False),
            mcp_capabilities=s.McpCapabilities(http=True),
            session_capabilities=session,
            field_meta={META_KEY: {"methods": extensions.EXTENSION_METHODS}},
        )
        return s.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=capabilities,
            auth_methods=auth.auth_methods(self.service.model),
            agent_info=s.Implementation(name="agent-host", version=__version__),
        )

    def _configure(self, options: object) -> None:
        """``_meta["agent-host"]`` of initialize: ``shellEnvironment``, the policy of
        every session's commands, terminals and MCP servers (over ``--shell-env``);
        ``sandbox``, how they are confined (a mode's name or the policy's JSON form,
        over ``--sandbox``);
        the model time limits ``modelFirstByteTimeout``, ``modelTimeout``,
        ``modelTotalTimeout``, ``modelRetries`` (over the flags)."""
        if options is None:
            return
        where = f'_meta["{META_KEY}"]'
        if not isinstance(options, dict):
            raise invalid_params(where, "must be an object")
        if "shellEnvironment" in options:
            try:
                policy = EnvironmentPolicy.from_json(
                    options["shellEnvironment"], where=f"{where}.shellEnvironment"
                )
            except ShellEnvironmentError as exc:
                raise invalid_params(exc.field, str(exc).removeprefix(exc.field).strip()) from None
            self.service.set_shell_environment(policy)
        if "sandbox" in options:
            try:
                sandbox = SandboxPolicy.from_json(options["sandbox"], where=f"{where}.sandbox")
            except SandboxConfigError as exc:
                field, _, problem = str(exc).partition(" ")
                raise invalid_params(field, problem) from None
            self.service.set_sandbox_policy(sandbox)
        self._configure_limits(options, where)

    def _configure_limits(self, options: dict[str, Any], where: str) -> None:
        given = {s.option: options[s.wire] for s in LIMIT_SETTINGS if s.wire in options}
        if not given:
            return
        for setting in LIMIT_SETTINGS:  # checked here, so the error names the key
            if setting.option in given:
                try:
                    limits.parse(setting, given[setting.option], setting.wire)
                except ModelConfigError as exc:
                    field = f"{where}.{setting.wire}"
                    problem = str(exc).removeprefix(setting.wire).lstrip(": ")
                    raise invalid_params(field, problem) from None
        # Those not named keep what the flags said.
        self.service.set_model_limits({**self.service.model_limits(), **given})

    async def authenticate(self, method_id: str, **kwargs: Any) -> s.AuthenticateResponse:
        auth.authenticate(self.service.model, method_id)
        return s.AuthenticateResponse()

    # -- sessions

    @answers
    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> s.NewSessionResponse:
        folder = _folder(cwd)
        auth.require_key(self.service.model)
        sid = await self.service.new(cwd=folder, mcp_servers=convert.mcp_servers(mcp_servers))
        self._after_answer(self._advertise(sid))
        return s.NewSessionResponse(
            session_id=sid, modes=self._modes(sid), config_options=await self._config(sid)
        )

    @answers
    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> s.LoadSessionResponse:
        # A restore a crash cut short is finished here, through the session's client.
        timeline = await self.service.load(session_id, cwd=_folder(cwd))
        await self._use_mcp_servers(session_id, mcp_servers)
        # The replay comes before the answer: the client shows it as the history.
        for update in convert.replay(timeline, self.port.root(session_id)):
            await self.port.notify(session_id, update)
        await self._advertise(session_id)
        return s.LoadSessionResponse(
            modes=self._modes(session_id), config_options=await self._config(session_id)
        )

    @answers
    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> s.ResumeSessionResponse:
        await self.service.resume(session_id, cwd=_folder(cwd))
        await self._use_mcp_servers(session_id, mcp_servers)
        self._after_answer(self._advertise(session_id))
        return s.ResumeSessionResponse(
            modes=self._modes(session_id), config_options=await self._config(session_id)
        )

    @answers
    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> s.ForkSessionResponse:
        # The fork runs in its source's folder (the service's rule); cwd is checked only.
        _folder(cwd)
        fork_id = await self.service.fork(session_id)
        await self._use_mcp_servers(fork_id, mcp_servers)
        self._after_answer(self._advertise(fork_id))
        return s.ForkSessionResponse(
            session_id=fork_id,
            modes=self._modes(fork_id),
            config_options=await self._config(fork_id),
        )

    @answers
    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> s.ListSessionsResponse:
        page = await self.service.list(
            cwd=_folder(cwd) if cwd is not None else None, cursor=cursor, limit=LIST_PAGE
        )
        return s.ListSessionsResponse(
            sessions=[convert.session_info(info) for info in page.sessions],
            next_cursor=page.next_cursor,
        )

    @answers
    async def close_session(self, session_id: str, **kwargs: Any) -> s.CloseSessionResponse:
        await self.service.close(session_id)
        return s.CloseSessionResponse()

    @answers
    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> s.SetSessionModeResponse:
        if mode_id not in APPROVALS:
            raise invalid_params("modeId", f"must be one of {', '.join(APPROVALS)}")
        await self.service.handle(session_id)  # SessionNotFound for an unknown one
        self.service.set_approval(session_id, mode_id)
        await self.port.notify(session_id, update_current_mode(mode_id))
        return s.SetSessionModeResponse()

    @answers
    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> s.SetSessionConfigOptionResponse:
        if config_id == SANDBOX_OPTION:
            if value not in SANDBOX_CHOICES:
                raise invalid_params("value", f"must be one of {', '.join(SANDBOX_CHOICES)}")
            await self.service.handle(session_id)  # SessionNotFound for an unknown one
            self.service.set_sandbox(session_id, str(value))
            return s.SetSessionConfigOptionResponse(config_options=await self._config(session_id))
        if config_id != MODEL_OPTION:
            raise invalid_params(
                "configId", f"the options are {MODEL_OPTION!r} and {SANDBOX_OPTION!r}"
            )
        if not isinstance(value, str) or not value.strip():
            raise invalid_params("value", "must be a model name such as openai/gpt-4.1")
        await self.service.handle(session_id)  # SessionNotFound for an unknown one
        # The next prompt names it; that prompt records it, and later turns keep it.
        self._models[session_id] = value
        return s.SetSessionConfigOptionResponse(config_options=await self._config(session_id))

    # -- turns

    @answers
    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> s.PromptResponse:
        text, context = convert.prompt_input(prompt)
        command = commands.parse(text)
        if command is not None:
            said = await commands.run(self.service, session_id, *command)
            for update in said.shown:
                await self.port.notify(session_id, update)
            await self.port.notify(session_id, update_agent_message_text(said.text))
            return s.PromptResponse(stop_reason="end_turn")
        model = self._models.pop(session_id, None)
        outcome = await self.service.send(session_id, text, context=context, model=model)
        usage = outcome.result.usage
        return s.PromptResponse(
            stop_reason=convert.stop_reason(outcome.result.stop_reason),
            usage=s.Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                total_tokens=usage.input_tokens + usage.output_tokens,
            ),
        )

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        # A notification: nothing to answer, so a bad id is only logged.
        try:
            await self.service.cancel(session_id)
        except AgentHostError as exc:  # a bad or unknown id; a bug is logged by the SDK
            log.warning("session/cancel ignored: %s", exc)

    # -- extensions

    @answers
    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await extensions.dispatch(self.service, method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        log.debug("extension notification _%s ignored", method)

    # -- helpers

    async def _config(
        self, session_id: str
    ) -> list[s.SessionConfigOptionSelect | s.SessionConfigOptionBoolean]:
        """The model, as a session config option: the session's, the server's, and
        the common ones (any other can be set by name)."""
        current = self._models.get(session_id) or await self.service.model_of(session_id)
        choices = dict.fromkeys([current, self.service.model, *COMMON_MODELS])
        return [
            s.SessionConfigOptionSelect(
                id=MODEL_OPTION,
                name="Model",
                category="model",
                type="select",
                current_value=current,
                options=[s.SessionConfigSelectOption(value=m, name=m) for m in choices],
            ),
            # Beside the approval mode: what a command the user approves can reach.
            s.SessionConfigOptionSelect(
                id=SANDBOX_OPTION,
                name="Sandbox",
                description="Where commands and MCP servers may write, and whether they "
                "reach the network (a command the sandbox stops can be approved to run "
                "without it)",
                type="select",
                current_value=self.service.sandbox_of(session_id).mode,
                options=[
                    s.SessionConfigSelectOption(value=mode, name=name)
                    for mode, name in SANDBOX_CHOICES.items()
                ],
            ),
        ]

    def _modes(self, session_id: str) -> s.SessionModeState:
        current = self.service.approval_of(session_id)
        return s.SessionModeState(current_mode_id=current, available_modes=MODES)

    async def _advertise(self, session_id: str) -> None:
        update = s.AvailableCommandsUpdate(
            session_update="available_commands_update", available_commands=commands.COMMANDS
        )
        await self.port.notify(session_id, update)

    async def _use_mcp_servers(self, session_id: str, servers: list[Any] | None) -> None:
        configs = convert.mcp_servers(servers)
        if configs is not None:
            await self.service.use_mcp_servers(session_id, configs)

    def _after_answer(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` once the current request's response is written: a client
        knows the session it names before anything about it arrives. (Off our stdio
        transport, as in-process, it is started now.)"""
        name = "advertising the slash commands"
        if not wire.after_response(work, name=name):
            run_task(work, name=name, keep=self._tasks)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _folder(cwd: str) -> Path:
    """ACP's cwd: an absolute path of an existing folder."""
    path = Path(cwd)
    if not path.is_absolute():
        raise invalid_params("cwd", f"must be an absolute path; got {cwd!r}")
    if not path.is_dir():
        raise invalid_params("cwd", f"{cwd} is not a directory")
    return path
