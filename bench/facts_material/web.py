"""A web team's repos and tickets: the storefront, checkout-api, the design system and the admin portal."""

from __future__ import annotations

from random import Random

from bench.facts_material import Domain, Fact, chain, f, hop, notes, v

CC, CU, CX = "claude-code", "cursor", "codex"

FACTS = (
    f(
        "release-manager",
        "Alex Novak is the storefront release manager this quarter; he cuts the release branches",
        project="storefront",
        who="who cuts the release branches this quarter?",
    ),
    f(
        "a11y-owner",
        "Accessibility audits are run by Grace Obi from the design team twice a year",
        who="who runs our accessibility audits?",
    ),
    f(
        "cdn-decision",
        "Chose imgproxy over Cloudinary for product images: self-hosted and 5x cheaper at our volume",
        "decision",
        agent=CC,
        project="storefront",
        who="which agent picked the image resizing service?",
        paraphrase="why don't we pay a hosted service to resize pictures?",
    ),
    f(
        "login-flaky",
        "JIRA-4821 tracks the flaky login test on the payments page",
        tags=("tests", "payments"),
        project="storefront",
        identifier="JIRA-4821",
        paraphrase="which ticket covers the sign-in e2e check that fails at random on checkout?",
    ),
    f(
        "pnpm-build",
        "Storefront is a pnpm workspace: run `pnpm -r build` from the repo root, never `npm install` inside a package",
        project="storefront",
        identifier="pnpm -r build",
        paraphrase="how do I compile every frontend package in one go?",
    ),
    f(
        "cart-locked",
        "checkout-api answers ERR_CART_LOCKED when two tabs submit the same cart; useCheckout.ts retries "
        "once after 300 ms",
        "finding",
        project="checkout-api",
        identifier="ERR_CART_LOCKED",
    ),
    f(
        "tokens",
        "Design tokens live in packages/design-system/src/tokens/colors.ts — no hardcoded hex values in components",
        "decision",
        project="design-system",
        paraphrase="where is the brand palette defined for the UI kit?",
    ),
    f(
        "momentjs",
        "Tomás decided to drop Moment.js for date-fns; it cuts about 60 KB from the storefront bundle",
        "decision",
        project="storefront",
        who="who decided we stop using Moment.js?",
        paraphrase="why did we change the library we use to format dates?",
    ),
    f(
        "owner-checkout",
        "Priya Raman owns checkout-api and approves every change to the payment flows",
        project="checkout-api",
        who="who is the owner of checkout-api?",
    ),
    f(
        "safari-flicker",
        "WEB-1302: product images flicker in Safari 17 with lazy loading; workaround is "
        'decoding="async" on the img tag',
        "blocker",
        project="storefront",
        identifier="WEB-1302",
    ),
    f(
        "playwright",
        "E2E runs on Playwright against preview deployments; locally `pnpm test:e2e --project=chromium`",
        project="storefront",
        identifier="pnpm test:e2e --project=chromium",
    ),
    f(
        "two-approvals",
        "Anything under apps/checkout/ needs two approvals before merge",
        "decision",
        project="storefront",
        paraphrase="how many reviewers must sign off on payment UI pull requests?",
    ),
    f(
        "sku-error",
        "Sentry: TypeError: Cannot read properties of undefined (reading 'sku') comes from the "
        "recently-viewed carousel when localStorage holds a stale product",
        "finding",
        project="storefront",
        identifier="Cannot read properties of undefined (reading 'sku')",
    ),
    f(
        "react17",
        "admin-portal is stuck on React 17: react-table v7 blocks the upgrade",
        "blocker",
        project="admin-portal",
        paraphrase="why hasn't the back-office app moved to the current React major?",
    ),
    f(
        "mei-qa",
        "Mei Lin runs the release QA checklist the day before each storefront deploy",
        project="storefront",
        who="who does the manual test pass before a release goes out?",
    ),
    f(
        "staging-url",
        "Staging storefront: staging.shop.example.dev, behind Cloudflare Access (Google login)",
        project="storefront",
        identifier="staging.shop.example.dev",
    ),
    f(
        "zod",
        "We validate API responses with Zod in the storefront; io-ts was dropped",
        "decision",
        agent=CU,
        project="storefront",
        who="which agent settled on Zod for response validation?",
    ),
    f(
        "lighthouse",
        "Lighthouse budget for the product page: performance 85 on mobile, CI fails below it",
        project="storefront",
        paraphrase="what page speed score must the item detail screen reach on phones?",
    ),
    f(
        "applepay",
        "PAY-377: Apple Pay button missing on iPadOS Safari, blocked on merchant domain verification",
        "blocker",
        project="checkout-api",
        identifier="PAY-377",
    ),
    f(
        "ratelimit",
        "Public catalog API rate limit is 600 requests per minute per API client",
        project="catalog-api",
        paraphrase="how many calls can a partner make each minute against the product listing endpoints?",
    ),
    f(
        "usecart",
        "The useCart hook must not be called in server components (it reads the Zustand store)",
        project="storefront",
        identifier="useCart",
    ),
    f(
        "storybook",
        "Design system Storybook is published to design.example.dev on every merge to main",
        project="design-system",
        paraphrase="where can I browse the catalogue of UI components?",
    ),
    f(
        "k8s-move",
        "Dan Okafor approved moving the storefront off Vercel onto our own Kubernetes cluster in Q2",
        "decision",
        project="storefront",
        who="who signed off on leaving Vercel?",
    ),
    f(
        "i18n",
        "Translations are managed in Crowdin; `pnpm i18n:pull` syncs them into apps/storefront/locales",
        project="storefront",
        identifier="pnpm i18n:pull",
    ),
    f(
        "consent",
        "The cookie consent banner must load before any analytics script (DPO review, legal requirement)",
        "decision",
        project="storefront",
        paraphrase="what has to be shown to visitors before tracking can start on the site?",
    ),
    f(
        "focus-ring",
        "design-system issue #2291: Button focus ring invisible in dark mode",
        "blocker",
        project="design-system",
        identifier="design-system #2291",
    ),
    f(
        "sofia-signoff",
        "Sofia Greco signs off any layout change to the checkout flow",
        project="storefront",
        who="whose approval do I need to rearrange the checkout screens?",
    ),
    f(
        "graphql-timeout",
        "Gateway error `upstream request timeout` on /graphql means the pricing resolver took over "
        "5 s; check pricing-svc first",
        "finding",
        project="storefront",
        identifier="upstream request timeout",
    ),
    f(
        "monorepo-owner",
        "CODEOWNERS: @web-platform owns packages/ui and packages/config",
        project="storefront",
        who="which team owns packages/ui in CODEOWNERS?",
    ),
    f(
        "prettier",
        "Formatting is Biome now, not Prettier: `pnpm biome check --write .`",
        "decision",
        agent=CX,
        project="storefront",
        identifier="pnpm biome check --write",
        who="which agent switched the repo formatter away from Prettier?",
    ),
    f(
        "coupon-bug",
        "PAY-402: coupon codes with lowercase letters are rejected at checkout; the API uppercases only "
        "on the second call",
        "blocker",
        project="checkout-api",
        identifier="PAY-402",
        paraphrase="why do discount vouchers typed in small letters fail at checkout?",
    ),
    f(
        "img-cdn",
        "Product images come from the imgproxy CDN at img.example-cdn.net with width presets 320/640/1280",
        project="storefront",
        paraphrase="what sizes can product pictures be requested in?",
    ),
    f(
        "a11y",
        "Accessibility target for the storefront is WCAG 2.2 AA; axe runs in the Playwright suite",
        project="storefront",
        paraphrase="which accessibility standard do we have to meet on the shop?",
    ),
    f(
        "webhook-sig",
        "Stripe webhooks are verified in checkout-api/internal/webhooks/verify.go; tolerance 5 minutes",
        project="checkout-api",
        identifier="internal/webhooks/verify.go",
    ),
    f(
        "preview-envs",
        "Every PR gets a preview at pr-<number>.preview.shop.example.dev, deleted 3 days after merge",
        project="storefront",
        paraphrase="how long do the per-branch test sites stay up after merging?",
    ),
    f(
        "pagination",
        "Catalog API pagination is cursor-based (`next_cursor`); offset pagination was removed in v3",
        "decision",
        project="catalog-api",
        identifier="next_cursor",
    ),
    f(
        "hotfix",
        "Hotfix process: branch from the release tag, PR to main and cherry-pick to release/*; Dan must approve",
        project="storefront",
        paraphrase="what are the steps to ship an urgent patch to production?",
    ),
    f(
        "search-owner",
        "Kenji Watanabe owns the search relevance work on the storefront (Algolia index settings)",
        project="storefront",
        who="who should I ask about how products are ranked in site search?",
    ),
)

CHAINS = (
    chain(
        "node-version",
        "which Node version does the storefront build with?",
        v("Storefront .nvmrc pins Node 18.19", agent=CU),
        v("Storefront now builds on Node 20.11 — .nvmrc and the CI image updated", "unmarked", agent=CC),
        project="storefront",
    ),
    chain(
        "flag-search",
        "what percentage of users see the new search UI?",
        v("Feature flag new_search_ui is at 10% rollout in production", agent=CX),
        v("new_search_ui raised to 25% rollout after a clean week", "supersede", agent=CX),
        v("new_search_ui is at 100% — flag kept for one more release, then removed", "supersede", agent=CU),
        project="storefront",
    ),
    chain(
        "deploy-day",
        "on which day does the storefront go to production?",
        v("Storefront production deploys happen on Tuesdays", agent=CU),
        v("Storefront release day moved to Thursday, after Mei's QA pass", "supersede", agent=CC),
        type="decision",
        project="storefront",
    ),
    chain(
        "checkout-lead",
        "who leads the checkout squad?",
        v("Checkout squad lead is Arjun Mehta", agent=CC),
        v("Priya Raman took over as checkout squad lead from Arjun", "unmarked", agent=CX),
        project="checkout-api",
    ),
    chain(
        "state-lib",
        "what do we use for client-side state in the storefront?",
        v("Client state in the storefront is Redux Toolkit", agent=CU),
        v("Replaced Redux Toolkit with Zustand for client state in the storefront", "supersede", agent=CC),
        type="decision",
        project="storefront",
    ),
    chain(
        "api-version",
        "which checkout-api version is live?",
        v("checkout-api v2.14.0 deployed to production", agent=CX),
        v("checkout-api v2.15.2 is in production (fixes the refund rounding bug)", "unmarked", agent=CX),
        v("checkout-api v2.16.0 live in prod since Monday", "unmarked", agent=CC),
        project="checkout-api",
    ),
    chain(
        "bundle-budget",
        "what is the JS bundle size limit for the storefront?",
        v("Storefront JS budget: 250 KB gzipped for the first load", agent=CU),
        v("Tightened the storefront first-load JS budget to 200 KB gzipped", "supersede", agent=CX),
        project="storefront",
    ),
    chain(
        "test-runner",
        "which unit test runner does the design system use?",
        v("design-system unit tests run on Jest", agent=CC),
        v("design-system moved its unit tests from Jest to Vitest", "unmarked", agent=CU),
        project="design-system",
    ),
)

HOPS = (
    hop("what port does the service that Priya owns listen on?", "owner-checkout", "checkout-port"),
    hop(
        "who has to approve changes to the service where Stripe webhook signatures are checked?",
        "webhook-sig",
        "owner-checkout",
    ),
    hop("which port do I call for the API that answers ERR_CART_LOCKED?", "cart-locked", "checkout-port"),
    hop("what is the staging address of the app Mei runs the release checklist for?", "mei-qa", "staging-url"),
    hop("how many requests per minute does the API with next_cursor pagination allow?", "pagination", "ratelimit"),
    hop("where can I see the component whose focus ring disappears in dark mode?", "focus-ring", "storybook"),
    hop("the person who approves hotfixes also approved which hosting move?", "hotfix", "k8s-move"),
)

EXTRA = (
    f(
        "checkout-port",
        "checkout-api listens on 8443 inside the cluster (service checkout-api.payments.svc)",
        project="checkout-api",
    ),
)

NOTES = (
    *notes(
        "finding",
        "The storefront's sitemap.xml is regenerated nightly by a Vercel cron; it skips out-of-stock products",
        "Hydration mismatch warnings on /account come from the locale-dependent date in the header",
        "The admin-portal CSV export times out above 20k rows; it should stream instead of buffering",
        "Most 404s in the storefront logs are old /p/<id> links from a 2023 newsletter",
        "Preview deployments share one Algolia index, so search results there are noisy",
        "The refund endpoint returns 200 with an error body when Stripe is down — client must check `ok`",
        project=None,
    ),
    *notes(
        "decision",
        "Storefront route handlers live in app/api/*; no new pages/api routes",
        "Icons come from lucide-react only; the old icon font is being removed",
        "Server actions are allowed only for forms that do not touch payments",
        "Feature flags are read through useFlag(); never read LaunchDarkly directly in components",
    ),
    *notes(
        "action-item",
        "Remove the legacy /checkout/v1 redirect after the March campaign ends",
        "Write a migration guide for design-system v5 (Button props renamed)",
        "Ask Priya whether refunds over 1000 EUR still need manual review",
        "Clean up the unused `legacyPriceFormat` util in packages/utils",
    ),
    *notes(
        "fact",
        "The storefront supports de, fr, nl and en locales; it is the only repo with RTL disabled",
        "admin-portal uses Vite; storefront uses Next.js 14 app router",
        "The design system ships ESM only since v4",
        "catalog-api is written in Kotlin (Ktor); checkout-api in Go",
        "Storefront analytics go to Plausible, not Google Analytics",
        "Product reviews are stored in the reviews-svc Postgres schema, read via catalog-api",
    ),
)

CHANGES = {
    "storefront": (
        "remove the old promo banner",
        "add skeleton loaders to the cart drawer",
        "split the product page bundle",
        "upgrade Next.js to the next patch release",
        "migrate the address form to react-hook-form",
        "fix the keyboard trap in the size picker",
        "make the newsletter modal dismissible with Escape",
        "cache category pages for 60 s",
        "fix the broken breadcrumb on nested categories",
        "add structured data (JSON-LD) to product pages",
        "fix double submit on the login form",
        "move the footer links into the CMS",
        "add a 'notify me' button for out-of-stock sizes",
        "stop sending the full cart to analytics",
        "lazy-load the reviews widget",
    ),
    "checkout-api": (
        "fix the currency rounding in totals",
        "add a retry to the inventory call",
        "log the Stripe idempotency key on failures",
        "add OpenTelemetry spans to the order handler",
        "rename `price_cents` to `amount_minor` in the order DTO",
        "add Klarna as a payment method behind a flag",
        "remove the unused `/api/legacy-cart` route",
    ),
    "design-system": (
        "drop IE-only polyfills",
        "replace the carousel component with CSS scroll snap",
        "fix focus handling in the mobile menu",
        "render prices with Intl.NumberFormat in the Price component",
    ),
    "admin-portal": (
        "add a CSV importer for gift cards",
        "paginate the order table",
        "add an admin view for failed webhooks",
        "add a dark mode",
        "fix timezone handling in the order export",
    ),
    "catalog-api": (
        "show VAT separately for B2B customers",
        "fix the sort order of sizes (S, M, L instead of alphabetical)",
        "add rate limiting to the newsletter signup",
    ),
}
PHRASES = (
    "Merged PR #{n} in {repo}: {change}",
    "Opened PR #{n} ({repo}) to {change}",
    "{repo} PR #{n} to {change} is waiting for review",
    "Reverted PR #{n} in {repo} ({change}) — broke staging",
)


def fill(rng: Random) -> list[Fact]:
    """Pull-request notes: a repo, a number, a change that fits the repo, one phrasing each."""
    out: list[Fact] = []
    used: set[int] = set()
    for repo, changes in CHANGES.items():
        for change in changes:
            n = rng.randint(1100, 4800)
            if n in used:
                continue
            used.add(n)
            text = rng.choice(PHRASES).format(n=n, repo=repo, change=change)
            out.append(Fact(f"pr-{n}", text, "history", ("pr",), repo))
    return out


MORE_NOTES = (
    *notes(
        "finding",
        "The product page makes 3 identical /inventory calls on load; React Query dedupe is off there",
        "Safari private mode blocks localStorage writes, so the wishlist silently fails",
        "LCP on category pages is the hero banner; it is not preloaded",
        "The checkout address autocomplete costs 0.4 EUR per 1000 requests; debounce is only 100 ms",
        "Bots hit /search?q= with random strings; 18% of search traffic last week",
        "The admin-portal build takes 4 min because of source maps for every chunk",
        'Twelve components in the design system still use the deprecated `size="xs"` prop',
        "The order confirmation email renders the wrong currency symbol for CHF",
    ),
    *notes(
        "decision",
        "Storefront images must have explicit width and height to avoid layout shift",
        "New API endpoints in checkout-api are versioned under /v3 only",
        "No client-side fetching on the product page; everything through server components",
        "Error boundaries per route segment, not one global boundary",
        "Customer-facing copy changes need a ticket in the CONTENT board",
    ),
    *notes(
        "action-item",
        "Add a Playwright test for the guest checkout with a gift card",
        "Upgrade the design system's Radix dependency before v5",
        "Ask Kenji whether synonyms for 'sneakers' were added to the search index",
        "Schedule the deletion of the old marketing microsite repo",
    ),
    *notes(
        "fact",
        "The storefront has about 1.2 million sessions per week, 70% mobile web",
        "checkout-api handles roughly 9k orders per day at peak season",
        "The admin portal is only reachable over the office VPN",
        "Release notes for the web apps are posted in #releases every Thursday afternoon",
        "The design system has 64 components, 41 of them with visual regression tests",
    ),
)

DOMAIN = Domain("web", (CU, CC, CX), FACTS + EXTRA, CHAINS, HOPS, NOTES + MORE_NOTES, fill)
