"""The analysis pipeline for one revert: link, purity, apply to base, files, symbols, dependents,
drift, backports and risk, as one :class:`RevertReport`.

Size: one job, the order of a check's stages and what runs beside what (the parts started early on
the second core, the fallbacks when history is partial); each stage's work lives in its own module.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from revertbot import git
from revertbot.analysis.backport_evidence import (
    MAX_BASE_COMMITS,
    MAX_COPY_SEARCH,
    base_state,
    confirm_title_matches,
    relink_branch_copies,
)
from revertbot.analysis.conflicts import MAX_COMMITS as MAX_CONFLICT_COMMITS, conflict_causes, mark_causes
from revertbot.analysis.critical import rule_suite
from revertbot.analysis.critical_stage import (
    MAX_GREP_LINES as MAX_NAMING_LINES,
    UNSEARCHED,
    Shared as CriticalShared,
    critical_first,
    names_to_search,
    naming_from_lines,
    with_repository_rules,
)
from revertbot.analysis.dependents import plan_string_lookups, search_dependents
from revertbot.analysis.dependents_cpp import search_cpp_dependents
from revertbot.analysis.dependents_files import deleted_header_includes, deleted_source_builds
from revertbot.analysis.dependents_model import Dependent
from revertbot.analysis.dependents_search import Riders
from revertbot.analysis.history import backports_and_main_line, find_drift
from revertbot.analysis.public_api_model import ApiFinding
from revertbot.analysis.public_api_stage import public_api_stage
from revertbot.analysis.pyparse import collector_paused
from revertbot.analysis.risk import RiskInputs, RiskThresholds, assess, with_selected_suites
from revertbot.analysis.scope_stage import scope_stage
from revertbot.analysis.split import Beside, split_map
from revertbot.analysis.symbols import SymbolChange, bound_excerpts, diff_symbols, fold_moves
from revertbot.analysis.symbols_cpp import (
    MAX_SOURCE_BYTES as MAX_CPP_SOURCE_BYTES,
    MAX_TOTAL_BYTES as MAX_CPP_TOTAL_BYTES,
    diff_cpp_symbols,
    fold_parse_notes,
    is_cpp_path,
    too_large_note,
)
from revertbot.config import Config, categorize, default_config, load_config, module_for, select_suites
from revertbot.errors import ConfigError, GitError, NotFoundError
from revertbot.globs import match_branch, match_glob
from revertbot.models import ApplyResult, Commit, Link, LinkMethod, Override, Unresolved
from revertbot.report_data import CodeExcerpt, CommitRef, FileChange, GitHubContext, GpuSummary, RevertReport
from revertbot.verdict import history_cache
from revertbot.verdict.detect import link_reverts
from revertbot.verdict.grammar import UNDO_KINDS, index_message, parse_message
from revertbot.verdict.history_stream import git_ancestry
from revertbot.verdict.proof import choose_mainlines, judge, with_mainlines
from revertbot.verdict.purity import Side, Vector, hunks, patch_stats, raw_entries, strip_raw
from revertbot.verdict.reason import classify_revert, linked_issues
from revertbot.verdict.reland import reland_risk
from revertbot.verdict.reland_content import WINDOW_DAYS, revert_fingerprint
from revertbot.verdict.reland_stage import RELAND_SCAN_COMMITS, content_story, find_reland_by_patch, reland_stage
from revertbot.verdict.releases import find_releases, with_branches
from revertbot.verdict.scan import _choose_by_diff as choose_by_diff, cut_by_shallow_history, github_slug

CONFIG_FILE = ".revertbot.yml"


def commit_ref(c: Commit) -> CommitRef:
    """The commit as the report names it; its own PR number comes from the subject (``... (#N)``)."""
    return CommitRef(c.sha, c.subject, c.author_name, c.commit_time, parse_message(c.message).own_pr)


def find_links(root: Path, commits: Sequence[Commit], in_scope: Collection[str], ref_name: str,
               slug: str | None, is_ancestor: Callable[[str, str], bool] | None = None) -> list[Link]:  # fmt: skip
    """What the check decides from messages: the links of the commits in ``in_scope`` among
    ``commits`` (the history, newest first). A link depends on the history, not on which other
    commits are in scope: ``bench/agree.py`` asks for every commit at once and compares with the scan.
    As the scan does, a reference that several commits match equally is settled by their diffs
    (the one commit whose change this one exactly inverts or redoes)."""
    # A cited sha a partial clone lacks is fetched by name (negotiated), never by git's lazy fetch.
    links = link_reverts(commits, ref_name=ref_name,
                         lookup_objects=lambda names: git.object_types_fetching(root, names),
                         select=lambda c: c.sha in in_scope, repo_slug=slug, is_ancestor=is_ancestor)  # fmt: skip
    if not any(link.candidates for link in links):
        return links
    parent = {c.sha: (c.parents or (None,))[0] for c in commits}
    wanted = dict.fromkeys(s for link in links if link.candidates for s in (link.revert, *link.candidates))
    patches, _errors, _cut = git.commit_patches(root, [(s, parent.get(s)) for s in wanted])
    vectors: dict[str, Vector] = {}
    return [choose_by_diff(link, patches, vectors) if link.candidates else link for link in links]


# The analysis holds many syntax trees at once: the cyclic collector would walk them all again
# every few thousand allocations (they hold no cycles; counting references frees them).
@collector_paused()
def check_revert(
    repo: str | Path,
    revert_ref: str,
    base_ref: str | None = None,
    config: Config | None = None,
    github: GitHubContext | None = None,
    gpu: GpuSummary | None = None,
    repo_name: str | None = None,
    language: str | None = None,
    since: str | None = None,
    message: str | None = None,
    detect_relands: bool = True,
    started: git.StartedLog | None = None,
    override: Override | None = None,
) -> RevertReport:
    """Analyse one revert against a base branch and assess its risk.

    Without ``since`` the change is the commit ``revert_ref`` itself. With ``since`` (a pull
    request's merge base) it is everything from ``since`` to ``revert_ref`` (the PR's head): the
    verdict, files, symbols and dependents cover the whole PR, and the originals are those of
    every revert-like commit in it. When no commit message says what is reverted, ``message``
    (the PR's title and body) is read as the head's message. When nothing says revert or
    reland and ``detect_relands`` holds, a change whose diff redoes a recently reverted original
    is checked as its reland (see :func:`find_reland_by_patch`). ``started`` is a read of the
    base's history begun earlier (see :class:`git.StartedLog`), used when it is the history
    the check reads. A link ``override`` (a maintainer's ``/revertbot link``, ``--original``) names
    the original instead of the messages; the report carries it.
    """
    root = git.repo_root(repo, started)
    head_sha = _resolve_in_clone(root, revert_ref)
    head_ref, base_sha = git.head_ref_and_commit(root, started) if base_ref is None else (None, None)
    if base_sha is None:
        base_sha = git.resolve_commit(root, base_ref or "HEAD")
    cfg, config_note = config, ""
    if cfg is None:
        committed = _committed_config(root, base_sha)
        cfg, config_note = _parsed_config(committed, base_sha), _checkout_config_note(root, committed, base_sha)
    # Only what linking and the story need is read, through the repository's history index (see
    # history_cache); it also says whether the revert is merged, without a walk of the history.
    base_index = _history_index(root, base_sha, started)
    if base_index is not None:
        merged = base_index.position(head_sha) is not None
        if started is not None:
            started.close()  # the whole read begun earlier is not needed: stop it
    else:
        merged = git.is_ancestor(root, head_sha, base_sha)
    # A merged revert is read in the base's history, so that later relands of it are seen too.
    history_tip = base_sha if merged else head_sha
    since_sha = git.resolve_commit(root, since) if since else None
    scope = [c.sha for c in git.log(root, f"{since_sha}..{head_sha}")] if since_sha else [head_sha]
    if since_sha is None and not merged and not _names_by_id(root, revert_ref, head_sha):
        # A name (a branch, a pull request's ref, HEAD, a tag) merges all it carries: judged whole
        # from where it leaves the base, as a pull request is (a commit id is judged alone, as a
        # pick of it).
        fork = git.merge_base(root, base_sha, head_sha)
        whole = [c.sha for c in git.log(root, f"{fork}..{head_sha}")] if fork is not None else []
        if len(whole) > 1:
            since_sha, scope = fork, whole
    in_scope = set(scope)
    tip_index = base_index if merged or base_index is None else _history_index(root, head_sha, None)
    targeted = _targeted_history(root, tip_index, head_sha, scope, override)
    if targeted is not None:
        commits = targeted.commits()
    else:
        commits = git.log(root, history_tip, keep=index_message, started=started)
    by_sha = {c.sha: c for c in commits}
    head = by_sha[head_sha]

    # "Reverts owner/name#N" names this repository's PR only when the names agree.
    slug = repo_name if repo_name and repo_name.count("/") == 1 else github_slug(root)
    ancestry = git_ancestry(root) if targeted is not None else None  # part of the history is at hand
    # What the history read is called in the links' notes ("not reachable from ..."): the base's
    # name for a merged revert, as the scan names the branch it reads.
    history_name = (base_ref or head_ref or "HEAD") if merged else revert_ref
    links = find_links(root, commits, in_scope, history_name, slug, ancestry)
    if override is not None and override.kind == "link":
        # A maintainer named the original (/revertbot link, check --original): it wins over detection.
        if override.original not in by_sha:
            raise NotFoundError(f"the original named by hand, {override.original[:12]}, is not in the history of "
                                f"{head_sha[:12]}", hint="name a commit the revert's history contains")  # fmt: skip
        links = [Link(head_sha, head.subject, "revert", (override.original,), ("override",))]
    if not links and message:
        # A hand-made revert PR: its commits say nothing, its title and body do.
        if targeted is not None:  # the index knows the commit's own message: the whole history then
            targeted, ancestry = None, None
            commits = git.log(root, history_tip, keep=index_message, started=started)
            by_sha = {c.sha: c for c in commits}
        commits = [dataclasses.replace(c, message=message) if c.sha == head_sha else c for c in commits]
        by_sha[head_sha] = head = dataclasses.replace(head, message=message)
        links = find_links(root, commits, {head_sha}, history_name, slug, ancestry)
    if not links and detect_relands:
        # Nothing says reland, but the change may redo a reverted original: compare the diffs.
        if targeted is not None:  # of the reverts among the commits before it
            commits = _widened(targeted, head_sha, RELAND_SCAN_COMMITS)
            by_sha = {c.sha: c for c in commits}
        found = find_reland_by_patch(root, commits, head_sha, since_sha or (head.parents or (None,))[0])
        links = [found] if found else []
    if not links:
        raise NotFoundError(
            f"{head_sha[:12]} ({head.subject!r}) does not look like a revert" + _shallow_note(root),
            hint="revertbot recognises 'Revert \"X\"', 'This reverts commit <sha>', 'Reverts owner/repo#N' and more",
        )
    link = _whole_change(links, head_sha, by_sha)
    # A revert picked onto a release branch names the main line's original: the branch's own copy.
    if targeted is not None and any(u.reason.startswith("on another branch") for u in link.unresolved):
        commits = _widened(targeted, link.revert, MAX_COPY_SEARCH)  # the copy is among the commits before it
        by_sha = {c.sha: c for c in commits}
    link = relink_branch_copies(root, link, commits)
    # Relands that say nothing, found by their diff: a later one of this revert, an earlier one of its original.
    if targeted is not None and link.direction == 1:  # the reverts in the days before each original too
        commits = targeted.with_reverts_before(link.originals, int(WINDOW_DAYS * 86400))
        if merged and link.kind in UNDO_KINDS:  # and the commits of the days after it that share a file with it
            raws, _ = git.commit_raws(root, [(link.revert, None)])
            touched = raw_entries(raws.get(link.revert, ""))
            commits = targeted.with_later_touching(link.revert, int(WINDOW_DAYS * 86400), touched)
        by_sha = {c.sha: c for c in commits}
    revert = by_sha[links[0].revert]  # the newest revert-like commit names the change
    parent = since_sha if since_sha is not None else (head.parents[0] if head.parents else None)
    _refuse_cut_history(root, link)
    originals = [by_sha[o] for o in link.originals]
    # Backports and drift mostly wait on git: they run beside the rest of the check (the
    # backports in a forked child: reading the release branches' logs would hold the interpreter
    # lock the symbols' parsing needs).
    # Base: the branch the revert is meant for.
    base_name = base_ref or (head_ref or git.current_branch_ref(root)).removeprefix("refs/heads/")
    backports_job = Beside(
        backports_and_main_line, root, originals, revert, base_sha,
        # Part of the history does not tell which branches leave it where: git answers then.
        lambda name: any(match_branch(name, g) for g in cfg.release_branches), commits if targeted is None else (),
        base_name,  # where the main line stands is said for a revert meant for another branch
    )  # fmt: skip
    # Whether the base carries the originals and has not undone them already: merged, it had them.
    base_job = None if merged else git.Background(base_state, root, originals, revert, base_sha)
    base_note = ""
    base_copies: tuple[str, ...] = ()  # the base's own copies of the originals: the change, not drift
    cpp_job: Beside | None = None  # the C++ dependents, searched by a second core (below)
    api_job: Beside | None = None  # the public API, judged by a second core (below)
    # Which version tags carry the original and the revert: waits on git too (two for-each-ref calls).
    releases_job = git.Background(find_releases, root, link.originals, head_sha)
    # Relands by content mostly wait on git too: found on a thread while the change is diffed and
    # proven. They add to the story's chain and later commits only, which nothing reads before the drift.
    story_job = git.Background(content_story, root, commits, link, merged)
    try:
        # A merge original is undone against the mainline the revert used (git revert -m N).
        mainlines = choose_mainlines(root, link, revert.message, {o: by_sha[o].parents for o in link.originals}, parent)
        wanted = [(head_sha, parent)] + [
            (o, mainlines[o].parent if o in mainlines else (by_sha[o].parents or (None,))[0]) for o in link.originals
        ]
        patches, errors, truncated = git.commit_patches(root, wanted)
        purity = with_mainlines(judge(root, [link], patches, errors, dict(wanted), truncated)[head_sha], mainlines)
        # A revert whose message limits it to part of the original is judged on that part.
        named_by = {commit_ref(o).pr for o in originals} | set(parse_message(revert.message).prs)
        purity = scope_stage(root, link, purity, [revert.message, message or ""], patches, dict(wanted),
                             lambda path: categorize(path, cfg) == "test", {n for n in named_by if n})  # fmt: skip
        revert_patch = strip_raw(patches.get(head_sha, ""))

        # A revert that is already part of the base is judged as of its own time: at its parent, not
        # at today's branch.
        apply_params: tuple[tuple[str, str], ...] = ()
        if merged:
            apply = ApplyResult(base=base_sha, clean=True, method="already-merged")
            apply_note, after_tree, drift_end = "already-merged", head_sha, parent or head_sha
        else:
            apply_note, drift_end = "", base_sha
            try:
                apply = git.apply_revert(root, base_sha, revert=head_sha, since=parent)
            except GitError as exc:
                if not git.is_missing_object(exc.stderr):
                    raise
                # A clone without objects the merge reads (a partial clone that cannot fetch, a damaged
                # one): whether it applies stays unknown, and the report says why, instead of no report.
                apply = None
                apply_note = f"this clone lacks objects the merge needs ({exc.stderr.splitlines()[-1].strip()})"
            clean_tree = apply.tree if apply is not None and apply.clean else None
            after_tree = clean_tree or base_sha
            if clean_tree is not None and clean_tree == git.trees_of(root, [base_sha]).get(base_sha):
                # Nothing changes on the base: the revert is already there, or the base never had the original.
                apply_note = "no-op"
                had = any(git.is_ancestor(root, o, base_sha) for o in link.originals)
                apply_params = (("why", "already-undone" if had else "never-had"),)
            elif base_job is not None:
                # It changes the base, but not what it claims: the base never had the original (the
                # revert takes back whatever else wrote the same lines), or undid it already (the
                # revert takes back the work since). An exact inverse all the same.
                missing, undone_by, searched, base_copies = base_job.result()
                if undone_by is not None:
                    apply_note, apply_params = "already-undone", (("by", undone_by),)
                elif missing:
                    apply_note, apply_params = "original-missing", (("missing", " ".join(missing)),)
                if searched >= MAX_BASE_COMMITS:
                    base_note = (f"the base's own commits were searched for copies and reverts of the original "
                                 f"up to the newest {MAX_BASE_COMMITS:,}")  # fmt: skip

        reland_info = None
        if link.kind == "reland":
            reland_info = reland_stage(root, link, by_sha, head_sha, patches, truncated, commit_ref)
        # The raw and numstat lines: complete even if the text was cut.
        files = _file_changes(patches.get(head_sha, ""), cfg)
        head_raw = patches.get(head_sha, "")
        unread_note = ""
        if head_sha in errors:
            # The diff text could not be made (file contents missing from this clone): the files still
            # come from the trees, so critical paths and the drift search see them; the line counts stay unknown.
            raws, _ = git.commit_raws(root, [(head_sha, parent)])
            files = _file_changes(raws.get(head_sha, ""), cfg)
            head_raw = raws.get(head_sha, "")
            if files:
                listed = "1 file is" if len(files) == 1 else f"{len(files)} files are"
                unread_note = (f"the revert's diff could not be read ({errors[head_sha]}): its {listed} listed "
                               "from the trees, without line counts or symbols")  # fmt: skip
        # What the repository itself shows is GPU code, at the change's own commits (trust rule 9).
        # The build files that name a changed native file are found by the dependents' git grep
        # below (one pass over the tree, not two): the symbols are worked out from the files in the
        # order the other rules give, and again should the whole answer reorder them.
        head_entries = raw_entries(head_raw)
        readable = head_sha not in errors
        shared = CriticalShared()
        ahead, _ = with_repository_rules(root, (head_sha, parent), files, head_entries, cfg, readable=readable,
                                         naming=UNSEARCHED, shared=shared)  # fmt: skip
        link, content_relands = story_job.result()
        drift_job = git.Background(
            # After any of the originals, the oldest first: one built on the oldest is drift too.
            find_drift, root, [o.sha for o in sorted(originals, key=lambda c: c.commit_time)], drift_end,
            [f.path for f in ahead], sorted({*scope, *link.chain})
        ) if originals else None  # fmt: skip
        symbols: list[SymbolChange] = []
        code_notes: list[str] = []
        dependents: list[Dependent] = []
        api: list[ApiFinding] = []  # public names the change breaks for users outside the repository
        # Uses inside the lines the revert itself changes are not dependents: they are read
        # against the tree the revert was applied to.
        applied_on = drift_end if apply is not None and apply.clean else None
        names = names_to_search([f.path for f in ahead], head_entries) if cfg.critical_paths_from_repository else []
        raw = raw_entries(patches.get(head_sha, ""))  # the revert's own diff, as the symbols read it
        naming_rider = Riders(tuple(names), MAX_NAMING_LINES) if names else None

        def analyse_code(ordered: Sequence[FileChange], riders: Sequence[Riders]) -> None:
            """Symbols, their dependents and the public API, from ``ordered`` (critical first)."""
            nonlocal symbols, code_notes, dependents, api, cpp_job, api_job
            symbols, code_notes, dependents, api = [], [], [], []

            def search_cpp(cpp_symbols: list[SymbolChange]) -> None:
                # tree-sitter holds the interpreter lock: a second core searches the C++ uses while
                # this one works out the Python symbols and searches their uses.
                nonlocal cpp_job
                if cpp_symbols:
                    cpp_job = Beside(search_cpp_dependents, root, after_tree, cpp_symbols, before=applied_on)

            cpp_job = None
            symbols, symbol_notes = _symbol_changes(root, raw, ordered, search_cpp)
            code_notes += symbol_notes
            # The public API parses both versions of the changed files: a second core does it while
            # this one searches the dependents.
            python_changed = any(f.path.endswith((".py", ".pyi")) for f in ordered)  # else it has nothing to read
            api_job = Beside(public_api_stage, root, parent, raw, symbols, revert_patch) if python_changed else None
            # getattr(x, "name"), torch.ops.<ns>.<name> of a removed Python op registration: the names
            # ride in the dependents' git grep (one pass over the tree's Python files, not two).
            by_string_plan = plan_string_lookups(root, after_tree, symbols, applied_on)
            removed_files = [f.path for f in ordered if f.status == "deleted"]
            search = search_dependents(root, after_tree, symbols, removed_files, before=applied_on,
                                       riders=[*riders, *([by_string_plan.riders] if by_string_plan.riders else [])])
            api, api_notes = (api_job.result() if api_job is not None
                              else public_api_stage(root, parent, raw, symbols, revert_patch))  # fmt: skip
            api_job = None
            code_notes += api_notes
            dependents = list(search.dependents)
            code_notes += list(search.notes)
            by_string = by_string_plan.finish(dependents)
            dependents += list(by_string.dependents)
            code_notes += list(by_string.notes)
            if cpp_job is not None:
                cpp_search = cpp_job.result()
                cpp_job = None
                dependents += list(cpp_search.dependents)
                code_notes += list(cpp_search.notes)
            # Headers the revert deletes that files left in the tree still include: the build breaks.
            deleted = [f.path for f in ordered if f.status == "deleted"]
            dependents += deleted_header_includes(root, after_tree, deleted)
            dependents += deleted_source_builds(root, after_tree, deleted)  # sources build files still list

        if apply_note != "no-op":
            analyse_code(ahead, [naming_rider] if naming_rider is not None else [])
        naming = None
        if naming_rider is not None and naming_rider.complete:
            naming = naming_from_lines(root, after_tree, names, naming_rider.lines)
        files, critical_notes = with_repository_rules(root, (head_sha, parent), files, head_entries, cfg,
                                                      readable=readable, naming=naming, shared=shared)  # fmt: skip
        if apply_note != "no-op" and _symbol_inputs(files) != _symbol_inputs(ahead):
            analyse_code(files, [])  # the build files made another file critical: the order changed
        notes: list[str] = [n for n in (config_note, unread_note, base_note) if n]
        notes += critical_notes
        notes += code_notes

        drift = [d for d in (drift_job.result() if drift_job else []) if d.sha not in base_copies]
        if apply is not None and not apply.clean and parent is not None:
            # Name the later commits that wrote what the revert now conflicts with.
            causes, untried = conflict_causes(root, parent, head_sha, base_sha, apply.conflicts)
            drift = mark_causes(drift, causes)
            if untried:
                notes.append(f"{untried} older later commit(s) on the conflicting files not checked for causing the "
                             f"conflict (the newest {MAX_CONFLICT_COMMITS} were)")  # fmt: skip
        backports, main_line = backports_job.result()
        backports = confirm_title_matches(root, backports, originals)  # a title is not evidence
        if main_line is not None and main_line.how == "title":
            # A title that is no evidence there: the main line does not carry it as far as is known.
            main_line = next(iter(confirm_title_matches(root, [main_line], originals)),
                             dataclasses.replace(main_line, original_pick=None, how=""))  # fmt: skip
    except BaseException:
        for job in (backports_job, cpp_job, api_job):
            if job is not None:
                job.close()  # its result will never be read
        raise
    age = None
    if originals:
        # The oldest original's: code has been built on it that long (a revert of several commits).
        age = max(0.0, (revert.commit_time - min(o.commit_time for o in originals)) / 86400)
    t = cfg.thresholds
    thresholds = RiskThresholds(
        age_days_medium=t.age_days_medium,
        age_days_high=t.age_days_high,
        drift_commits_medium=t.drift_commits_medium,
        drift_commits_high=t.drift_commits_high,
        memory_regression_pct=t.memory_regression_pct,
        capture_time_regression_pct=t.capture_time_regression_pct,
        dependents_high=t.dependents_high,
    )
    if gpu is not None:
        gpu = with_selected_suites(gpu, select_suites((f.path for f in files), cfg), _no_suite_for(files, cfg))
    risk = assess(
        RiskInputs(
            purity, apply, apply_note, drift, dependents, files, gpu, backports, len(link.chain), age, apply_params,
            public_api=tuple(api), public_api_restores=link.kind != "reland", originals=len(originals),
        ),
        thresholds,
    )
    if reland_info is not None:
        risk = reland_risk(risk, reland_info)
    chain = tuple(commit_ref(by_sha[s]) for s in link.chain if s in by_sha)
    return RevertReport(
        repo=repo_name or root.name,
        revert=dataclasses.replace(commit_ref(revert), body=revert.body.strip()),
        kind=link.kind,
        originals=tuple(commit_ref(o) for o in originals),
        linked_by=link.linked_by,
        unresolved=link.unresolved,
        chain=chain,
        purity=purity,
        base_ref=base_name,
        apply=apply,
        apply_note=apply_note,
        files=files,
        symbols=tuple(symbols),
        symbol_notes=tuple(notes),
        dependents=tuple(dependents),
        public_api=tuple(api),
        drift=tuple(drift),
        backports=tuple(backports),
        main_line=main_line,
        excerpts=select_excerpts(revert_patch, files, symbols, cfg.report.max_excerpt_lines),
        risk=risk,
        github=github,
        gpu=gpu,
        language=language or cfg.language,
        max_files_listed=cfg.report.max_files_listed,
        scope=tuple(commit_ref(by_sha[s]) for s in scope) if len(scope) > 1 else (),
        later=tuple(commit_ref(by_sha[s]) for s in link.later if s in by_sha),
        reason=reland_info.reason if reland_info is not None else classify_revert(revert.message),
        reland=reland_info,
        override=override,
        message_issues=linked_issues(revert.message, slug or ""),
        # Where the original and the revert shipped: version tags, and the release branches found above.
        releases=with_branches(releases_job.result(), backports),
        content_relands=content_relands,
        fingerprint=revert_fingerprint(patches.get(head_sha, "")) if link.direction == 1 and link.kind != "reland"
        else None,
    )


def base_config(root: Path, base_sha: str) -> Config:
    """The configuration the base commit holds (its ``.revertbot.yml`` as committed; the defaults
    without one): the branch checked out, a pull request's own, never decides how it is judged.
    ``--config`` names another file."""
    return _parsed_config(_committed_config(root, base_sha), base_sha)


def _committed_config(root: Path, base_sha: str) -> bytes | None:
    return git.blobs(root, [f"{base_sha}:{CONFIG_FILE}"]).get(f"{base_sha}:{CONFIG_FILE}")


def _parsed_config(text: bytes | None, base_sha: str) -> Config:
    if text is None:
        return default_config()
    try:
        decoded = text.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{CONFIG_FILE} at {base_sha[:12]}: not valid UTF-8 (byte {exc.start})") from None
    return load_config(decoded, f"{CONFIG_FILE} at {base_sha[:12]}")


def _checkout_config_note(root: Path, committed: bytes | None, base_sha: str) -> str:
    """A note when the checkout's ``.revertbot.yml`` is not the base commit's (``committed``; edited,
    or another branch checked out): the base's was used."""
    try:
        here = (root / CONFIG_FILE).read_bytes()
    except OSError:
        return ""
    if here == committed:
        return ""
    return (f"the checkout's {CONFIG_FILE} is not the base commit's ({base_sha[:12]}): the base's was used "
            f"(--config {CONFIG_FILE} uses the checkout's)")


def _history_index(root: Path, tip: str, started: git.StartedLog | None) -> history_cache.HistoryIndex | None:
    """The history index of ``tip`` (see :mod:`history_cache`), or None where the whole history is
    read: a shallow clone, or when the environment asks for it (``REVERTBOT_FULL_HISTORY=1``, to
    compare with the whole read)."""
    if os.environ.get(history_cache.FULL_HISTORY_ENV) == "1" or git.shallow_commits(root):
        return None
    return history_cache.history_index(root, tip, started)


def _targeted_history(root: Path, idx: history_cache.HistoryIndex | None, head_sha: str, scope: Sequence[str],
                      override: Override | None) -> history_cache.PartialHistory | None:  # fmt: skip
    """The part of ``idx``'s history that one check of ``head_sha`` reads (see
    :func:`history_cache.linking_history`), or None where the whole history is read: no index, or
    a hand-named original not written as a full sha."""
    if idx is None:
        return None
    extra = list(scope)
    if override is not None and override.kind == "link":
        if not git.HEX_RE.fullmatch(override.original) or len(override.original) != len(head_sha):
            return None
        extra.append(override.original)
    pos = idx.position(head_sha)
    if pos is None:
        return None
    return history_cache.linking_history(root, idx, pos, extra)


def _widened(part: history_cache.PartialHistory, sha: str, before: int) -> list[Commit]:
    """The commits of ``part`` with the ``before`` commits of the history that come before ``sha``."""
    pos = part.idx.position(sha)
    return part.commits() if pos is None else part.widen(pos, pos + before + 1)


def _whole_change(links: Sequence[Link], head_sha: str, by_sha: Mapping[str, Commit]) -> Link:
    """One link for the whole change: the originals of every revert-like commit in it (oldest
    first), judged against the change's head."""
    if len(links) == 1:
        return dataclasses.replace(links[0], revert=head_sha)
    order = {sha: i for i, sha in enumerate(by_sha)}  # newest first, as git log lists them
    originals: dict[str, LinkMethod] = {}
    for link in links:
        for sha, how in zip(link.originals, link.linked_by, strict=True):
            originals.setdefault(sha, how)
    ordered = sorted(originals, key=lambda s: -order.get(s, -1))
    unresolved = tuple(dict.fromkeys(u for link in links for u in link.unresolved))
    chain = tuple(dict.fromkeys(s for link in links for s in link.chain))
    if len({link.direction for link in links}) > 1:
        unresolved += (Unresolved("the pull request", "it both reverts and re-lands changes"),)
    newest = links[0]
    later = tuple(dict.fromkeys(s for link in links for s in link.later))
    return Link(head_sha, newest.subject, newest.kind, tuple(ordered), tuple(originals[s] for s in ordered),
                unresolved, chain, newest.direction, later=later)  # fmt: skip


def _refuse_cut_history(root: Path, link: Link) -> None:
    """A shallow clone that lacks the revert's parent or an original cannot be checked: say how to deepen."""
    boundary = git.shallow_commits(root)
    if not boundary:
        return
    cut = cut_by_shallow_history([link], boundary)
    if link.revert in boundary:
        cut.append(f"{link.revert[:10]} is at the clone's depth limit")
    if cut:
        depth = git.shallow_depth(root)
        raise NotFoundError(
            f"{root} is a shallow clone (depth {depth}) and the check needs history it does not have ({cut[0]}): "
            "the original may be beyond its shallow boundary",
            hint=git.deepen_hint(depth),
        )


def _no_suite_for(files: Sequence[FileChange], cfg: Config) -> list[str]:
    """The GPU-critical files of the change that no GPU suite covers: none selects them by its
    paths, and none names them as its test or import (``suite-test``, ``suite-import``)."""
    out = []
    for f in files:
        named = {rule_suite(r) for r in f.critical_rules}
        if f.critical and not select_suites([f.path], cfg) and not named & set(cfg.gpu.suites):
            out.append(f.path)
    return out


def _names_by_id(root: Path, ref: str, sha: str) -> bool:
    """Whether ``ref`` gave the commit ``sha`` by its id, whole or abbreviated (``11472c90d5``), not
    by a name (a branch, a tag, a pull request's ref, ``HEAD``; a branch called ``cafe`` is read as
    the branch, as git reads it)."""
    digits = ref.strip().lower()
    if _HEX_DIGITS.fullmatch(digits) is None or not sha.lower().startswith(digits):
        return False
    return len(digits) == len(sha) or not git.ref_named(root, ref.strip())


_HEX_DIGITS = re.compile(r"[0-9a-f]{4,64}")


def _resolve_in_clone(root: Path, ref: str) -> str:
    """``ref``'s commit; in a shallow clone, a ref that is not there is said to be maybe beyond
    the clone's shallow boundary, with the command to deepen it (not "check the spelling")."""
    try:
        return git.resolve_commit(root, ref)
    except NotFoundError as exc:
        if not git.shallow_commits(root) or "unknown ref" not in str(exc.message):
            raise
        depth = git.shallow_depth(root)
        raise NotFoundError(
            f"{ref!r} is not in this clone: it may be beyond the shallow boundary of this clone (depth {depth})",
            hint=git.deepen_hint(depth),
        ) from exc


def _shallow_note(root: Path) -> str:
    """For a shallow clone: the original may be beyond its boundary (read as not a revert)."""
    if not git.shallow_commits(root):
        return ""
    depth = git.shallow_depth(root)
    return (f"; the original may be beyond the shallow boundary of this clone (depth {depth}): "
            f"{git.deepen_hint(depth)}")  # fmt: skip


def _file_changes(patch: str, cfg: Config) -> tuple[FileChange, ...]:
    out = []
    for path, st in patch_stats(patch).items():
        status = "added" if st.existence > 0 else "deleted" if st.existence < 0 else "modified"
        globs = tuple(g for g in cfg.critical_paths if match_glob(path, g))
        # A file a GPU suite is configured for needs that suite: it is on a critical path too.
        globs += tuple(f"{g} (GPU suite {name})" for name, suite in sorted(cfg.gpu.suites.items())
                       for g in suite.paths if g not in globs and match_glob(path, g))  # fmt: skip
        out.append(
            FileChange(
                path=path,
                module=module_for(path, cfg),
                category=categorize(path, cfg),
                status=status,  # type: ignore[arg-type]
                added=st.added,
                removed=st.removed,
                critical=bool(globs),
                critical_globs=globs,
            )
        )
    return tuple(sorted(out, key=critical_first))


#: Python files whose symbols one check analyses (parsing costs about a millisecond per file and side).
MAX_SYMBOL_FILES = 5_000


def _symbol_inputs(files: Sequence[FileChange]) -> tuple[list[str], list[str]]:
    """What :func:`_symbol_changes` reads of ``files``, in its order: the Python files it analyses
    and the C++/CUDA ones."""
    py = [f.path for f in files if f.path.endswith((".py", ".pyi"))][:MAX_SYMBOL_FILES]
    return py, [f.path for f in files if is_cpp_path(f.path)]


def _symbol_changes(
    root: Path,
    raw: Mapping[str, tuple[Side, Side]],
    files: Sequence[FileChange],
    cpp_ready: Callable[[list[SymbolChange]], None] = lambda _: None,
) -> tuple[list[SymbolChange], list[str]]:
    """Symbol changes of the Python and then the C++/CUDA files, read by the blob ids of the
    change's raw diff (a ``rev:path`` lookup walks the tree again for every file: minutes for tens
    of thousands). The C++ ones are worked out first and handed to ``cpp_ready``."""
    cpp_changes, cpp_notes = _cpp_symbol_changes(root, raw, [f.path for f in files if is_cpp_path(f.path)])
    cpp_ready(cpp_changes)
    py = [f.path for f in files if f.path.endswith((".py", ".pyi"))]
    skipped = py[MAX_SYMBOL_FILES:]
    py = py[:MAX_SYMBOL_FILES]  # files come critical first, then by the size of their change
    ids = {p: tuple(side[1] if side else None for side in raw.get(p, (None, None))) for p in py}
    contents = git.blobs(root, [i for pair in ids.values() for i in pair if i])
    changes: list[SymbolChange] = []
    notes: list[str] = []

    def text(oid: str | None) -> str | None:
        data = contents.get(oid) if oid else None
        return data.decode("utf-8", "replace") if data is not None else None

    versions = [(p, text(ids[p][0]), text(ids[p][1])) for p in py]
    # Parsing holds the interpreter lock: large changes are shared with a second core.
    diffs = split_map(lambda v: diff_symbols(*v), versions, lambda v: len(v[1] or "") + len(v[2] or ""))
    for (p, _, _), (found, note) in zip(versions, diffs, strict=True):
        changes += list(found)
        if note:
            notes.append(f"{p}: {note}")
    if skipped:
        notes.append(
            f"symbols analysed in {MAX_SYMBOL_FILES:,} of {MAX_SYMBOL_FILES + len(skipped):,} Python files "
            f"(the critical and most changed first); not in {len(skipped):,} more, e.g. {skipped[0]}"
        )
    changes += cpp_changes
    notes += cpp_notes
    other = [f.path for f in files if not f.path.endswith((".py", ".pyi")) and not is_cpp_path(f.path)]
    if other:
        noun = "file" if len(other) == 1 else "files"
        notes.append(f"{len(other)} other {noun} (not Python or C++/CUDA) analysed at file level only")
    return bound_excerpts(fold_moves(changes)), notes  # a definition moved elsewhere is said once, as a move


def _cpp_symbol_changes(
    root: Path, raw: Mapping[str, tuple[Side, Side]], paths: Sequence[str]
) -> tuple[list[SymbolChange], list[str]]:
    """C++/CUDA symbol changes of ``paths``, reading at most ``MAX_CPP_TOTAL_BYTES`` of source
    (blobs by the ids of the change's raw diff, as for Python)."""
    if not paths:
        return [], []
    ids = {p: tuple(side[1] if side else None for side in raw.get(p, (None, None))) for p in paths}
    sizes = git.blob_sizes(root, [i for pair in ids.values() for i in pair if i])
    changes: list[SymbolChange] = []
    notes: list[str] = []
    total = 0
    wanted: list[str] = []
    for i, p in enumerate(paths):
        side_sizes = [sizes.get(oid) or 0 for oid in ids[p] if oid]
        largest = max(side_sizes, default=0)
        if largest > MAX_CPP_SOURCE_BYTES:  # generated code: not even read
            notes.append(too_large_note(p, largest))
            continue
        if total + sum(side_sizes) > MAX_CPP_TOTAL_BYTES:
            notes.append(f"{len(paths) - i} C++/CUDA file(s) not analysed for symbols (limit "
                         f"{MAX_CPP_TOTAL_BYTES // 1_000_000} MB of source), e.g. {p}")  # fmt: skip
            break
        total += sum(side_sizes)
        wanted.append(p)
    for start in range(0, len(wanted), 100):
        batch = wanted[start : start + 100]
        contents = git.blobs(root, [oid for p in batch for oid in ids[p] if oid])
        versions = [(p, contents.get(before) if before else None, contents.get(after) if after else None)
                    for p, (before, after) in ((p, ids[p]) for p in batch)]  # fmt: skip
        # tree-sitter holds the interpreter lock: large changes are parsed on two cores, as the Python ones.
        for found, found_notes in split_map(lambda v: diff_cpp_symbols(*v), versions,
                                            lambda v: len(v[1] or b"") + len(v[2] or b"")):  # fmt: skip
            changes += list(found)
            notes += found_notes
    return changes, fold_parse_notes(notes)


_WORD_RE = re.compile(r"\w+")


def select_excerpts(
    patch: str, files: Sequence[FileChange], symbols: Sequence[SymbolChange], max_lines: int, count: int = 2
) -> tuple[CodeExcerpt, ...]:
    """The most telling hunks: in critical files first, then those that remove or change the
    symbols the revert touches, then the largest."""
    critical = {f.path for f in files if f.critical}
    category = {f.path: f.category for f in files}
    names = Counter(s.bound_name if is_cpp_path(s.file) else s.name.rsplit(".", 1)[-1] for s in symbols)
    names.pop("", None)
    # Identifier names are looked up among each line's words (a regex per name and line is
    # quadratic: minutes for a revert of thousands of files); the rare other names keep a regex.
    words = {n: k for n, k in names.items() if _WORD_RE.fullmatch(n)}
    # A name found nowhere in the patch needs no regex on every line (``import:os`` never is).
    others = [(n, re.compile(rf"\b{re.escape(n)}\b"), k) for n, k in names.items() if n not in words and n in patch]

    def mentions_in(line: str) -> int:
        found = sum(words.get(w, 0) for w in set(_WORD_RE.findall(line))) if words else 0
        return found + sum(k for n, rx, k in others if n in line and rx.search(line))

    by_file = [(path in critical, category.get(path) == "source", path, header, lines)
               for path, header, lines, _old, _new in hunks(patch)]  # fmt: skip
    # A hunk below the count-th best by its file alone cannot be among the chosen: its mentions
    # are not counted (most of a large revert's lines can be in tests or docs).
    ranks = sorted(((crit, source) for crit, source, *_ in by_file), reverse=True)
    least = ranks[count - 1] if 0 < count <= len(ranks) else (False, False)
    scored = []
    for i, (crit, source, path, header, lines) in enumerate(by_file):
        changed = [ln for ln in lines if ln[:1] in "+-"]
        mentions = sum(mentions_in(ln) for ln in changed) if (crit, source) >= least else 0
        score = (crit, source, mentions, len(changed), -i)
        scored.append((score, path, header, lines))
    scored.sort(key=lambda t: t[0], reverse=True)
    out = []
    for _, path, header, lines in scored[:count]:
        truncated = len(lines) > max_lines
        out.append(CodeExcerpt(path, header, "\n".join(lines[:max_lines]), truncated))
    return tuple(out)
