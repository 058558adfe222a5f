"""Gating: a step's gate request, its durable timers (reminder, escalation, deadline), decisions."""

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from compiler.run import dag, waits
    from compiler.run import gates as gatebook
    from compiler.run import state as rs
    from schemas.base import FrozenModel
    from schemas.event_catalogue import (
        GATE_DECIDED,
        GATE_DECISION_REFUSED,
        GATE_ESCALATED,
        GATE_REMINDER,
        GATE_REQUESTED,
    )
    from schemas.events import SYSTEM_ACTOR, Actor
    from schemas.run import DecideGateInput, GateDecision
    from schemas.run_events import (
        GateDecided,
        GateDecisionRefused,
        GateEscalated,
        GateReminder,
        GateRequested,
    )
    from workflows import gate_spans
    from workflows.core import RunCore


class Gating(RunCore):
    """A gate opens when its step is otherwise ready and closes on a decision or its deadline."""

    async def _decide(self, inp: DecideGateInput) -> GateDecision:
        self._state = waits.gate_decided(self._state, inp, workflow.now())
        gate = self._state.gates[inp.gate_id]
        assert gate.decision is not None
        run = self._input
        gate_spans.gate_decided(
            run.run_id,
            run.scope.tenant,
            inp.gate_id,
            inp.decision,
            inp.actor.kind,
            gate.requested_at,
        )
        await self._gate_event(
            GATE_DECIDED,
            inp.gate_id,
            inp.actor,
            GateDecided(
                gate_id=inp.gate_id,
                decision=inp.decision,
                reason=inp.reason,
                contract_hash=inp.contract_hash,
                gated_steps=gate.spec.gated_step_keys,
            ),
        )
        return gate.decision

    async def _refuse_decision(self, inp: DecideGateInput, problem: str) -> None:
        """A signalled decision that does not apply is recorded, never applied."""
        await self._gate_event(
            GATE_DECISION_REFUSED,
            inp.gate_id,
            inp.actor,
            GateDecisionRefused(
                gate_id=inp.gate_id,
                decision=inp.decision,
                reason=inp.reason,
                refused_because=problem,
            ),
            suffix=f"{inp.actor.id}:{workflow.now().isoformat()}",
        )

    async def _open_gates(self) -> None:
        """Request the gate of every step that is otherwise ready (once per gate)."""
        for node in self._state.nodes:
            states = self._state.states
            if (
                node.gate_id is None
                or states[node.step_key].status != "pending"
                or not dag.deps_done(node, states)
            ):
                continue
            gate = self._state.gates[node.gate_id]
            if gate.status == "dormant":
                # Before the event's await, so no query sees a pending gate with a pending step.
                self._state = waits.gate_requested(self._state, node, workflow.now())
                gate_spans.gate_opened(
                    self._input.run_id, self._input.scope.tenant, node.gate_id, gate.approver_role
                )
                await self._gate_event(
                    GATE_REQUESTED,
                    node.gate_id,
                    SYSTEM_ACTOR,
                    GateRequested(gate_id=node.gate_id, gate=gate.spec),
                )
                self._start_gate_clock(node.gate_id)
            if self._state.gates[node.gate_id].status == "pending":
                self._state = rs.step_awaiting(self._state, node.step_key)

    def _settle_gates(self) -> None:
        """A rejected gate fails its waiting steps (and so skips their dependents)."""
        self._state = waits.gates_settled(self._state, workflow.now())

    def _restart_gate_clocks(self) -> None:
        """After continue-as-new: the pending gates' timers start again from their state."""
        for gate_id, gate in self._state.gates.items():
            if gate.status == "pending":
                self._start_gate_clock(gate_id)

    def _start_gate_clock(self, gate_id: str) -> None:
        if gate_id not in self._gate_clocks or self._gate_clocks[gate_id].done():
            self._gate_clocks[gate_id] = asyncio.ensure_future(self._gate_clock(gate_id))

    async def _gate_clock(self, gate_id: str) -> None:
        """Durable timers for a pending gate: reminders and its deadline. No polling."""
        while True:
            timer = gatebook.next_timer(self._state.gates[gate_id], workflow.now())
            if timer is None:
                return
            kind, delay = timer
            try:
                await workflow.wait_condition(
                    lambda: self._state.gates[gate_id].status != "pending",
                    timeout=delay.total_seconds(),
                )
                return
            except TimeoutError:
                await self._on_gate_timer(gate_id, kind)

    async def _on_gate_timer(self, gate_id: str, kind: str) -> None:
        gate = self._state.gates[gate_id]
        if kind == "reminder":
            self._state = waits.gate_reminded(self._state, gate_id)
            await self._gate_event(
                GATE_REMINDER,
                gate_id,
                SYSTEM_ACTOR,
                GateReminder(
                    gate_id=gate_id,
                    reminder=gate.reminders + 1,
                    approver_role=gate.approver_role,
                    waiting_s=(workflow.now() - gate.requested_at).total_seconds()
                    if gate.requested_at
                    else 0,
                ),
                suffix=str(gate.reminders + 1),
            )
            return
        if gate.spec.on_timeout == "escalate" and gate.spec.escalate_to_role:
            self._state = waits.gate_escalated(self._state, gate_id)
            await self._gate_event(
                GATE_ESCALATED,
                gate_id,
                SYSTEM_ACTOR,
                GateEscalated(
                    gate_id=gate_id,
                    from_role=gate.approver_role,
                    to_role=gate.spec.escalate_to_role,
                ),
            )
            return
        timeout = DecideGateInput(
            gate_id=gate_id,
            decision="reject",
            actor=SYSTEM_ACTOR,
            reason=f"no decision within the {gate.spec.deadline_s}s deadline",
            contract_hash=gate.spec.contract_hash,
        )
        await self._decide(timeout)

    async def _gate_event(
        self,
        type_: str,
        gate_id: str,
        actor: Actor,
        payload: FrozenModel,
        suffix: str = "",
    ) -> None:
        await self._log.emit(
            type_,
            "gate",
            self._root,
            payload,
            key=gate_id,
            actor=actor,
            id_suffix=f"{gate_id}" + (f":{suffix}" if suffix else ""),
        )
