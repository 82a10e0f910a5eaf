"""MkDocs hook: the pages that live outside docs/ become pages of the site. Each family's page,
rlfactory_envs/<family>/README.md, is served as families/<family>.md and listed under "Families" in the nav (found
by globbing, so a new family's page appears without editing mkdocs.yml); the repository's README is served as
quickstart.md. Links are written for GitHub, relative to each file's place in the repository; they are rewritten
to the pages' places in the site."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

LINK = re.compile(r"(\]\()([^)\s#]+\.(?:md|png))((?:#[^)\s]*)?\))")
QUICKSTART = "quickstart.md"


def repository_root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def outside_pages(config) -> dict[str, str]:
    """The pages kept outside docs/: their path in the site, by their path in the repository."""
    root = repository_root(config)
    pages = {"README.md": QUICKSTART}
    for readme in sorted(root.glob("rlfactory_envs/*/README.md")):
        pages[readme.relative_to(root).as_posix()] = f"families/{readme.parent.name}.md"
    return pages


def on_config(config):
    families = [{Path(site).stem: site} for repo, site in outside_pages(config).items() if site != QUICKSTART]
    config.nav = [*(config.nav or []), {"Families": families}]
    return config


def on_files(files: Files, config) -> Files:
    root = repository_root(config)
    for repo_path, site_path in outside_pages(config).items():
        files.append(File.generated(config, site_path, abs_src_path=str(root / repo_path)))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Rewrite each link to a .md file (or a .png picture) of the repository to its place in the site."""
    sites = outside_pages(config)
    sources = {site: repo for repo, site in sites.items()}
    here = sources.get(page.file.src_uri, f"docs/{page.file.src_uri}")

    def site_link(match: re.Match) -> str:
        target = posixpath.normpath(posixpath.join(posixpath.dirname(here), match.group(2)))
        site = sites.get(target) or (target.removeprefix("docs/") if target.startswith("docs/") else None)
        if site is None:
            return match.group(0)
        relative = posixpath.relpath(site, posixpath.dirname(page.file.src_uri) or ".")
        return f"{match.group(1)}{relative}{match.group(3)}"

    return LINK.sub(site_link, markdown)
