"""The user's own preferences and habits, as the coding agents and assistants pick them up."""

from __future__ import annotations

from random import Random

from bench.facts_material import Domain, Fact, chain, f, hop, notes, v

CC, CU, GM, HA = "claude-code", "cursor", "gemini-cli", "home-assistant"

FACTS = (
    f(
        "accountant",
        "Their accountant is Marta Lopes; tax documents go to her by 15 March",
        agent=HA,
        who="who does their tax paperwork?",
    ),
    f(
        "gp",
        "Their GP is Dr. Ricardo Alves at the Saúde Campo de Ourique clinic",
        agent=HA,
        who="which doctor do they see for check-ups?",
    ),
    f(
        "ruff",
        "Picked Ruff over Black + isort + flake8 for their Python projects",
        "decision",
        agent=CU,
        who="which agent chose the single Python linter-formatter for them?",
        paraphrase="why is there only one tool for linting and formatting in their Python repos?",
    ),
    f(
        "fastapi",
        "Prefers FastAPI over Flask for Python web services",
        "preference",
        paraphrase="which framework should I pick when I start a new HTTP backend in Python for them?",
    ),
    f(
        "tabs",
        "Wants 4-space indentation everywhere except Go and Makefiles",
        "preference",
        paraphrase="how wide should code be indented?",
    ),
    f(
        "commit-style",
        "Commit messages: imperative mood, no Conventional Commits prefixes, body wrapped at 72",
        "preference",
        paraphrase="how should I word the messages when I record changes in git for them?",
    ),
    f(
        "typing",
        "Wants type hints on every public function and mypy --strict clean",
        "preference",
        paraphrase="how strict should the static checking of Python annotations be?",
    ),
    f(
        "no-emoji",
        "Dislikes emoji in code comments and commit messages",
        "preference",
        paraphrase="are pictograms ok in the notes I leave in source files?",
    ),
    f(
        "timezone",
        "Works from Lisbon (WET/WEST); deep-work block 09:00-12:00, no meetings then",
        "preference",
        paraphrase="when should I avoid booking calls with them?",
    ),
    f(
        "pytest",
        "Prefers pytest with plain asserts; no unittest.TestCase classes in new code",
        "preference",
        paraphrase="what style of test suite do they like in Python?",
    ),
    f("uv", "Uses uv for Python environments; `uv sync` then `uv run pytest`", "preference", identifier="uv sync"),
    f(
        "dark-theme",
        "Editor theme is Catppuccin Mocha with JetBrains Mono 14",
        "preference",
        paraphrase="what colour scheme and typeface does their editor use?",
    ),
    f(
        "review-tone",
        "Wants code review comments short and direct, with a suggested patch when possible",
        "preference",
        paraphrase="how do they like feedback on pull requests to be written?",
    ),
    f(
        "sql-style",
        "SQL: lowercase keywords, leading commas, CTEs over subqueries",
        "preference",
        paraphrase="how should queries for the database be formatted?",
    ),
    f(
        "coffee",
        "Drinks flat whites, oat milk; no coffee after 3 pm",
        "preference",
        agent=HA,
        paraphrase="what should I order for them at the café in the afternoon?",
    ),
    f(
        "running",
        "Runs 5 km on Tuesday, Thursday and Saturday mornings before 8",
        "preference",
        agent=HA,
        paraphrase="which mornings are they out jogging?",
    ),
    f(
        "reading",
        "Reading list: 'Designing Data-Intensive Applications' next, then 'A Philosophy of Software Design'",
        "preference",
        paraphrase="which books are queued up to read?",
    ),
    f(
        "diet",
        "Vegetarian, eats fish occasionally; allergic to cashews",
        "preference",
        agent=HA,
        paraphrase="what food must I avoid when booking a restaurant for them?",
    ),
    f(
        "langs",
        "Speaks Portuguese and English; replies to the family group chat in Portuguese",
        "preference",
        agent=HA,
        paraphrase="what language do they use with relatives?",
    ),
    f("terminal", "Terminal is WezTerm with tmux; prefix key is Ctrl-a", "preference", identifier="Ctrl-a"),
    f(
        "docstrings",
        "Docstrings in Google style, one-line summary first",
        "preference",
        who="which agent noted the docstring convention?",
        agent=CU,
    ),
    f(
        "rust-pref",
        "Wants CLI tools written in Rust when speed matters, otherwise Python with Typer",
        "preference",
        paraphrase="which language should a new command-line utility be written in?",
    ),
    f(
        "notifications",
        "Only ping on Slack for blockers; everything else can wait for the daily summary",
        "preference",
        paraphrase="when is it ok to interrupt them with a chat message?",
    ),
    f(
        "pr-size",
        "Prefers PRs under 400 changed lines; split bigger work into stacked PRs",
        "preference",
        paraphrase="how big should a change be before I break it into several reviews?",
    ),
    f(
        "vacation",
        "On holiday 14-25 April (Azores); no deploys to approve then",
        "preference",
        agent=GM,
        paraphrase="when will they be away on a trip this spring?",
        who="which agent recorded the April holiday dates?",
    ),
    f(
        "keyboard",
        "Uses a split keyboard with a Colemak-DH layout",
        "preference",
        paraphrase="what kind of typing layout do they use?",
    ),
    f(
        "music",
        "Listens to lo-fi playlists while coding; dislikes lyrics during focus work",
        "preference",
        agent=HA,
        paraphrase="what should play in the background when they're concentrating?",
    ),
)

CHAINS = (
    chain(
        "coding-tool",
        "what coding tools do I use?",
        v("Uses Cursor as the main editor, with Copilot turned off", agent=CU),
        v("Switched from Cursor to Claude Code in January; VS Code stays for debugging", "unmarked", agent=CC),
        type="preference",
    ),
    chain(
        "node-pm",
        "which JavaScript package manager do they want?",
        v("Prefers npm for JavaScript projects — no yarn", agent=CU),
        v("Now prefers pnpm for all JS projects", "supersede", agent=CC),
        type="preference",
    ),
    chain(
        "standup",
        "when is the daily standup?",
        v("Daily standup at 09:30 Lisbon time", agent=GM),
        v("Standup moved to 10:15 so it no longer cuts into deep work", "supersede", agent=GM),
        type="preference",
    ),
    chain(
        "shell",
        "which shell do they use?",
        v("Shell is zsh with oh-my-zsh", agent=CC),
        v("Moved to fish shell; zsh config archived", "unmarked", agent=CU),
        type="preference",
    ),
    chain(
        "laptop",
        "what laptop do they work on?",
        v("Works on a 2021 MacBook Pro M1 Pro, 16 GB", agent=GM),
        v("New laptop: ThinkPad X1 Carbon Gen 12 with Fedora 40", "unmarked", agent=CC),
        type="fact",
    ),
    chain(
        "python-version",
        "which Python version should new projects target?",
        v("New Python projects target 3.11", agent=CC),
        v("Target Python 3.12 for new projects from now on", "supersede", agent=CU),
        v("New projects target Python 3.13; 3.12 is the floor for libraries", "supersede", agent=CC),
        type="preference",
    ),
    chain(
        "llm-pref",
        "which model do they like for long code reviews?",
        v("For long code reviews they like Gemini 1.5 Pro because of the context window", agent=GM),
        v("Prefers Claude for long code reviews now; Gemini only for huge logs", "supersede", agent=CC),
        type="preference",
    ),
    chain(
        "gym",
        "which days do they go to the climbing gym?",
        v("Climbing gym on Mondays and Wednesdays after 18:00", agent=HA),
        v("Climbing is now Wednesday and Friday evenings", "unmarked", agent=HA),
        type="preference",
    ),
)

HOPS = (
    hop("during their holiday, who should approve storefront hotfixes instead?", "vacation", "deputy"),
    hop(
        "when do they regularly meet the person who covers their approvals while they're away?", "deputy", "one-on-one"
    ),
    hop("what do they do before 8 on the days they cycle to the office?", "bike", "running"),
    hop("how do I publish a release of the open-source project they maintain?", "oss", "oss-release"),
    hop("where is the firmware layout for the keyboard they type Colemak-DH on?", "keyboard", "voyager"),
)

EXTRA = (
    f("deputy", "While the user is away, Dan Okafor is the deputy approver for storefront hotfixes"),
    f("one-on-one", "Has a standing 1:1 with Dan every second Wednesday at 14:00"),
    f("bike", "Bikes to the office on Tuesdays and Thursdays"),
    f("oss", "Is a maintainer of yamlsnip, a small open-source YAML linter written in Rust, in their spare time"),
    f("oss-release", "yamlsnip releases: bump the version with `cargo release minor`, CI publishes to crates.io"),
    f("voyager", "The split keyboard is a ZSA Voyager; its layout 'lisbon-dh' is edited in Oryx"),
)

NOTES = (
    *notes(
        "preference",
        "Likes short summaries at the end of a long agent session: what changed, what's left",
        "Prefers Markdown tables over bullet lists for comparisons",
        "Wants dependency upgrades in separate PRs from feature work",
        "Keeps personal dotfiles in github.com/<user>/dotfiles; don't touch them from work machines",
        "Prefers dates written as YYYY-MM-DD",
        "Reads email twice a day, 11:00 and 16:00",
        "Would rather have one failing test than a skipped one",
        "Likes Make targets as the entry point of every repo",
    ),
    *notes(
        "fact",
        "Orders lunch from the place downstairs on Fridays with the team",
        "Their GitHub handle is used for both work and open-source contributions",
        "Has a second monitor in portrait mode for logs",
    ),
)

TOPICS = (
    "error handling",
    "logging",
    "naming",
    "tests",
    "dependencies",
    "docs",
    "config",
    "CLI output",
    "APIs",
    "git",
    "async code",
    "comments",
)
RULES = {
    "error handling": ("raise specific exceptions, never bare except", "errors should say what to do next"),
    "logging": ("structured logs with key=value pairs", "no print() in library code"),
    "naming": ("no abbreviations in public names", "module names are nouns"),
    "tests": ("one behaviour per test, named after it", "no mocks for the database — use a real one in a container"),
    "dependencies": ("pin direct dependencies, let the lock file do the rest", "no new dependency for under 50 lines"),
    "docs": ("every README starts with how to run it", "keep ADRs in docs/adr"),
    "config": ("config from environment variables, validated once at start-up", "no YAML for app settings"),
    "CLI output": ("machine-readable output behind --json", "colours only when stdout is a TTY"),
    "APIs": ("JSON field names in snake_case", "every list endpoint paginates"),
    "git": ("rebase, don't merge, when updating a branch", "no force-push to shared branches"),
    "async code": ("no blocking calls inside async functions", "timeouts on every network call"),
    "comments": ("comments explain why, not what", "TODOs carry a ticket number"),
}


def fill(rng: Random) -> list[Fact]:
    """Coding-style preferences, one per rule, with the topic named one of several ways."""
    out: list[Fact] = []
    for topic in TOPICS:
        for rule in RULES[topic]:
            lead = rng.choice(("On {t}: {r}", "{T}: {r}", "Style rule ({t}): {r}", "Coding style, {t}: {r}"))
            text = lead.format(t=topic, T=topic[0].upper() + topic[1:], r=rule)
            out.append(Fact(f"style-{len(out)}", text, "preference", ("style",)))
    return out


MORE_NOTES = (
    *notes(
        "preference",
        "Prefers httpx over requests in new Python code",
        "Wants README examples that can be copy-pasted and run as they are",
        "Likes feature branches named <ticket>-<short-description>",
        "Prefers SQLite for prototypes and Postgres for anything shared",
        "Wants agents to ask before deleting files outside the repo",
        "Prefers ripgrep and fd over grep and find in shell snippets",
        "Likes the changelog grouped by Added / Changed / Fixed",
        "Does not want auto-formatting of files they did not touch in a PR",
        "Prefers long-form Slack threads over calls for design discussions",
        "Wants error messages in CLIs to suggest the next command",
        "Prefers Docker Compose for local services over installing them on the host",
        "Likes a green test run shown before any refactor is proposed",
    ),
    *notes(
        "fact",
        "Their home office is in the attic; the Wi-Fi there is weaker in the afternoon",
        "Mentors a junior developer, Rui, on Friday mornings",
        "Gives a talk on MCP servers at the Lisbon Python meetup in May",
    ),
)

DOMAIN = Domain("personal", (CC, CU, GM), FACTS + EXTRA, CHAINS, HOPS, NOTES + MORE_NOTES, fill)
