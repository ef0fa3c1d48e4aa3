"""Seats: a party of the conversation played from outside the solver.

`-T agent=human` / `-T user=human` (a person at a terminal, `pibench play`) and the training
environment's policy (`pibench_inspect.env`, agent `policy`) take a party's place in the same
conversation solver, engine, user simulator and limits as any run. Whoever runs the solver
installs a *seat* for the time of the run (`with seated(seat): ...`); the solver asks it for the
agent or the user it stands for. A run that needs a seat nobody installed stops with a message
saying where that party is played.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Iterator, Protocol

if TYPE_CHECKING:
    from ..domain.loader import Domain
    from ..scenario.model import Scenario

# the task's TaskArgs (not imported: task_args.py imports this module for the seated names)
TaskArgs = Any

# agent and user names a seat stands for (never a model, a built-in or a remote party)
SEATED_AGENTS = ("human", "policy")
SEATED_USERS = ("human",)

WHERE = {
    "human": "a person plays it at a terminal: `pibench play SCENARIO_ID` (--as agent or --as user)",
    "policy": "it is the training environment's policy: pibench_inspect.env.make(...)",
}


class Seat(Protocol):
    def agent(self, name: str, scenario: "Scenario", domain: "Domain", config: TaskArgs) -> Any: ...

    def user(self, name: str, scenario: "Scenario", config: TaskArgs) -> Any: ...


# a context variable, not a global: each environment runs its episodes in a context of its own,
# and Inspect's sample tasks inherit the context `pibench play` set before calling eval()
_SEAT: ContextVar[Seat | None] = ContextVar("pibench_seat", default=None)


@contextmanager
def seated(seat: Seat) -> Iterator[Seat]:
    token = _SEAT.set(seat)
    try:
        yield seat
    finally:
        _SEAT.reset(token)


def current_seat() -> Seat | None:
    return _SEAT.get()


def require_seat(role: str, name: str) -> Seat:
    seat = _SEAT.get()
    if seat is None:
        raise ValueError(f"-T {role}={name}: nothing plays this {role} here; {WHERE.get(name, name)}")
    return seat


def seated_agent(config: TaskArgs, scenario: "Scenario", domain: "Domain") -> Any:
    return require_seat("agent", config.agent).agent(config.agent, scenario, domain, config)


def seated_user(config: TaskArgs, scenario: "Scenario") -> Any:
    return require_seat("user", config.user).user(config.user, scenario, config)
