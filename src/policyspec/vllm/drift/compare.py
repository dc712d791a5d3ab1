"""Every difference between two fingerprints, one sentence each, in the
spirit of typeshed's stubtest: say what differs, never guess what it means.
The count of differences is the distance that picks the nearest known
revision.
"""

from __future__ import annotations

from dataclasses import dataclass

from policyspec.vllm.drift.fingerprint import Fingerprint, Helper, Member, signature

__all__ = ["Difference", "differences"]


@dataclass(frozen=True)
class Difference:
    area: str
    """``CachePolicy``, ``helper``, ``ChunkStatus``, ``ReqContext`` or ``manager``."""
    name: str
    """The member, helper or policy method it is about."""
    message: str


def differences(found: Fingerprint, known: Fingerprint) -> list[Difference]:
    """What ``found`` has that ``known`` (a stored revision) has not, and the
    reverse, in a fixed order: CachePolicy, helpers, ChunkStatus,
    ReqContext, the managers' calls."""
    was = known.revision or f"vLLM {known.vllm}"
    out: list[Difference] = []
    out += _classes("CachePolicy", found.cache_policy, known.cache_policy, was)
    out += _helpers(found.helpers, known.helpers, was)
    out += _classes("ChunkStatus", found.chunk_status, known.chunk_status, was)
    out += _classes("ReqContext", found.req_context, known.req_context, was)
    out += _manager(found, known, was)
    return out


def _describe(area: str, member: Member) -> str:
    """``abstract``, ``a default``, ``a property``, ``a field (c_int32)`` ..."""
    if member.kind == "abstract method":
        return "abstract"
    if member.kind == "method":
        return "a default" if area == "CachePolicy" else "a method"
    if member.kind == "field":
        return f"a field ({member.detail})" if member.detail else "a field"
    return f"an {member.kind}" if member.kind[0] in "aeiou" else f"a {member.kind}"


def _shown(name: str, member: Member) -> str:
    """A method with its parameters; a property, field or attribute by name."""
    return f"{name}{signature(member.params)}" if "method" in member.kind else name


def _classes(
    area: str, found: dict[str, Member] | None, known: dict[str, Member] | None, was: str
) -> list[Difference]:
    if found is None or known is None:
        if found is known:
            return []
        where = "kv_offload/base.py" if area == "ReqContext" else "cpu/policies/base.py"
        text = (f"class {area} is gone from {where} (it is in {was})" if found is None
                else f"class {area} is new in {where} (not in {was})")
        return [Difference(area, area, text)]
    out: list[Difference] = []
    for name in sorted(found.keys() | known.keys()):
        now, then = found.get(name), known.get(name)
        label = f"{area}.{name}"
        if then is None and now is not None:
            out.append(Difference(area, name, _added(area, name, now)))
        elif now is None and then is not None:
            out.append(Difference(
                area, name,
                f"{area}.{_shown(name, then)} was removed (in {was} it is "
                f"{_describe(area, then)})",
            ))
        elif now is not None and then is not None:
            out += _changed(area, label, name, now, then, was)
    return out


def _added(area: str, name: str, member: Member) -> str:
    shown = f"{area}.{_shown(name, member)}"
    if area == "CachePolicy" and member.kind.startswith("abstract"):
        return f"{shown} is new and abstract: every policy must now define it"
    text = f"{shown} is new ({_describe(area, member)})"
    if member.calls:
        text += f"; it calls {', '.join(member.calls)}"
    return text


def _changed(
    area: str, label: str, name: str, now: Member, then: Member, was: str
) -> list[Difference]:
    out: list[Difference] = []
    if now.kind != then.kind or (now.kind == "field" and now.detail != then.detail):
        out.append(Difference(
            area, name,
            f"{label} is now {_describe(area, now)} (in {was}: {_describe(area, then)})",
        ))
    elif now.detail != then.detail:
        out.append(Difference(
            area, name,
            f"{label} is now decorated {now.detail or '(nothing more)'} "
            f"(in {was}: {then.detail or 'nothing more'})",
        ))
    if now.params != then.params:
        out.append(Difference(
            area, name,
            f"{label} now takes {signature(now.params)} (in {was}: {signature(then.params)})",
        ))
    for call in sorted(set(now.calls) - set(then.calls)):
        out.append(Difference(area, name, f"{label} now calls {call} ({was}'s does not)"))
    for call in sorted(set(then.calls) - set(now.calls)):
        out.append(Difference(area, name, f"{label} no longer calls {call} ({was}'s does)"))
    return out


def _helpers(found: dict[str, Helper], known: dict[str, Helper], was: str) -> list[Difference]:
    out: list[Difference] = []
    for name in sorted(found.keys() | known.keys()):
        now, then = found.get(name), known.get(name)
        where = "cpu/policies/base.py"
        if then is None and now is not None:
            users = f", used by {', '.join(now.used_by)}" if now.used_by else ""
            out.append(Difference(
                "helper", name,
                f"{where} has a new helper {name}{signature(now.params)}{users}",
            ))
        elif now is None and then is not None:
            out.append(Difference(
                "helper", name, f"the helper {name}{signature(then.params)} of {where} was "
                f"removed (it is in {was})",
            ))
        elif now is not None and then is not None:
            if now.params != then.params:
                out.append(Difference(
                    "helper", name, f"the helper {name} now takes {signature(now.params)} "
                    f"(in {was}: {signature(then.params)})",
                ))
            if now.used_by != then.used_by:
                out.append(Difference(
                    "helper", name, f"the helper {name} is now used by "
                    f"{', '.join(now.used_by) or 'no in-tree policy'} "
                    f"(in {was}: {', '.join(then.used_by) or 'none'})",
                ))
    return out


def _manager(found: Fingerprint, known: Fingerprint, was: str) -> list[Difference]:
    out: list[Difference] = []
    if found.policy_attribute != known.policy_attribute:
        out.append(Difference(
            "manager", found.policy_attribute or "-",
            "the managers hold their CachePolicy in "
            f"{found.policy_attribute or 'no attribute annotated CachePolicy in cpu/manager.py'}"
            f" (in {was}: {known.policy_attribute or 'none'})",
        ))
    now, then = found.manager_calls, known.manager_calls
    for method in sorted(now.keys() | then.keys()):
        files_now, files_then = set(now.get(method, ())), set(then.get(method, ()))
        if not files_then:
            out.append(Difference(
                "manager", method,
                f"the managers now call policy.{method} (in {', '.join(sorted(files_now))}; "
                f"{was}'s do not)",
            ))
        elif not files_now:
            out.append(Difference(
                "manager", method,
                f"the managers no longer call policy.{method} ({was}'s do, in "
                f"{', '.join(sorted(files_then))})",
            ))
        else:
            if files_now - files_then:
                out.append(Difference(
                    "manager", method,
                    f"policy.{method} is now also called in "
                    f"{', '.join(sorted(files_now - files_then))} (in {was}: in "
                    f"{', '.join(sorted(files_then))})",
                ))
            if files_then - files_now:
                out.append(Difference(
                    "manager", method,
                    f"policy.{method} is no longer called in "
                    f"{', '.join(sorted(files_then - files_now))} (in {was} it is)",
                ))
    return out
