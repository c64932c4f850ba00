"""Running git: the only package that starts a git process.

Callers use the names re-exported here (``from revertbot import git``; ``git.run(...)``); each
module below holds one job: ``process`` (starting git), ``refs`` (the repository, refs, ancestry),
``commits`` (reading history), ``objects`` (names, types, trees), ``contents`` (blobs and files),
``patches`` (batched diffs), ``partial`` (partial clones: blobs fetched in batches), ``fetching``
(fetching the refs an analysis reads, in one fetch), ``scratch``
(the throw-away object store), ``merges`` (applying a revert in memory) and ``writes`` (commits,
refs, pushes). Nothing here modifies the user's working tree.
"""

import importlib
import pkgutil
import sys
from types import ModuleType

from revertbot.git.commits import (
    StartedLog as StartedLog,
    commits_of as commits_of,
    iter_changed_paths as iter_changed_paths,
    iter_log as iter_log,
    log as log,
    log_revs as log_revs,
    stdin_revisions as stdin_revisions,
)
from revertbot.git.contents import (
    AS_COMMIT as AS_COMMIT,
    blob_sizes as blob_sizes,
    blobs as blobs,
    grep_fixed as grep_fixed,
    local_object_types as local_object_types,
    object_types as object_types,
    show_file as show_file,
    start_object_types as start_object_types,
    tree_files as tree_files,
)
from revertbot.git.fetching import (
    FetchError as FetchError,
    FetchResult as FetchResult,
    commit_present as commit_present,
    drop_gone_branches as drop_gone_branches,
    fetch_refspecs as fetch_refspecs,
    fetched_refs as fetched_refs,
    join_shallow as join_shallow,
    local_refs as local_refs,
    mark_on_base as mark_on_base,
    name_remote_head as name_remote_head,
    object_types_fetching as object_types_fetching,
    pattern_refspecs as pattern_refspecs,
    recorded_parents as recorded_parents,
    ref_commits as ref_commits,
    remote_branches as remote_branches,
    remote_url as remote_url,
    valid_branch as valid_branch,
)
from revertbot.git.merges import (
    MergeResult as MergeResult,
    apply_revert as apply_revert,
    export_tree as export_tree,
    merge_trees as merge_trees,
    merge_trees_without_renames as merge_trees_without_renames,
    parse_conflict_markers as parse_conflict_markers,
    tree_differences as tree_differences,
)
from revertbot.git.objects import (
    EMPTY_TREE as EMPTY_TREE,
    GITLINK_MODE as GITLINK_MODE,
    ZERO_MODE as ZERO_MODE,
    object_format as object_format,
    object_names as object_names,
    trees_of as trees_of,
)
from revertbot.git.partial import (
    PARTIAL_CLONE_KEYS as PARTIAL_CLONE_KEYS,
    PREFETCH_BATCH as PREFETCH_BATCH,
    is_missing_object as is_missing_object,
    is_partial_clone as is_partial_clone,
    missing_objects as missing_objects,
    prefetch_blobs as prefetch_blobs,
    prefetch_specs as prefetch_specs,
    prefetch_tree_blobs as prefetch_tree_blobs,
    promisor_remote as promisor_remote,
)
from revertbot.git.patches import (
    MAX_PATCH_BYTES as MAX_PATCH_BYTES,
    PatchProgress as PatchProgress,
    commit_patches as commit_patches,
    commit_raws as commit_raws,
    commit_texts as commit_texts,
    hunk_headers as hunk_headers,
    prefetch_diff_blobs as prefetch_diff_blobs,
    similarity_diffs as similarity_diffs,
    start_commit_raws as start_commit_raws,
    start_unreadable_blobs as start_unreadable_blobs,
    unreadable_blobs as unreadable_blobs,
)
from revertbot.git.process import (
    OWN_OBJECTS_ONLY as OWN_OBJECTS_ONLY,
    Background as Background,
    Started as Started,
    run as run,
    run_bytes as run_bytes,
    run_pipeline as run_pipeline,
    two_at_a_time as two_at_a_time,
    use_commit_graph as use_commit_graph,
)
from revertbot.git.refs import (
    DATE_FORMS as DATE_FORMS,
    HEX_RE as HEX_RE,
    ancestors_among as ancestors_among,
    approxidate as approxidate,
    branches_containing as branches_containing,
    config_values as config_values,
    current_branch_ref as current_branch_ref,
    deepen_hint as deepen_hint,
    first_parent_range as first_parent_range,
    has_commit_graph as has_commit_graph,
    has_commits as has_commits,
    has_head as has_head,
    head_ref_and_commit as head_ref_and_commit,
    invalid_ref_name as invalid_ref_name,
    is_ancestor as is_ancestor,
    is_shallow as is_shallow,
    list_refs as list_refs,
    main_line_ref as main_line_ref,
    merge_base as merge_base,
    on_base_commits as on_base_commits,
    ref_named as ref_named,
    ref_sha as ref_sha,
    repo_root as repo_root,
    resolve_commit as resolve_commit,
    resolve_named_commit as resolve_named_commit,
    shallow_commits as shallow_commits,
    shallow_depth as shallow_depth,
)
from revertbot.git.scratch import (
    SCRATCH_MIN_FREE as SCRATCH_MIN_FREE,
    remove_kept_objects as remove_kept_objects,
    scratch_objects as scratch_objects,
)
from revertbot.git.stitch import (
    stitch as stitch,
    stitches as stitches,
    unstitch as unstitch,
)
from revertbot.git.writes import (
    FALLBACK_IDENT as FALLBACK_IDENT,
    commit_tree as commit_tree,
    create_ref as create_ref,
    identity_env as identity_env,
    push_refs as push_refs,
    set_ref as set_ref,
    tree_of_files as tree_of_files,
)


def bindings(name: str) -> list[ModuleType]:
    """The modules of this package that bind ``name`` to the same object (the package itself first
    when it exports it).

    The modules import one another's functions by name, so a benchmark or a test that wraps one
    (to time it, or to count the processes it starts) must wrap every binding, not one of them."""
    package = sys.modules[__name__]
    modules = [package] + [importlib.import_module(f"{__name__}.{m.name}") for m in pkgutil.iter_modules(__path__)]
    bound = [m for m in modules if name in vars(m)]
    if not bound:
        raise AttributeError(f"no module of {__name__} binds {name!r}")
    target = vars(bound[0])[name]
    return [m for m in bound if vars(m)[name] is target]
