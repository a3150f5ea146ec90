"""A mobile app (React Native shop app, iOS and Android): builds, store releases, crashes, SDKs."""

from __future__ import annotations

from random import Random

from bench.facts_material import Domain, Fact, chain, f, hop, notes, v

CU, GM, CC = "cursor", "gemini-cli", "claude-code"

FACTS = (
    f(
        "qa-mobile",
        "Bruno Costa does the mobile regression test on real devices before each store submission",
        tags=("qa",),
        who="who tests the app on physical phones before we submit?",
    ),
    f(
        "android-lead",
        "Android lead is Olga Ivanova; she owns the Gradle setup and the Play Console",
        tags=("android",),
        who="who owns the Android build configuration?",
    ),
    f(
        "bitrise",
        "Decided to keep iOS builds on Bitrise: GitHub's macOS runners were 2x slower for our project",
        "decision",
        agent=CC,
        tags=("ci",),
        who="which agent recorded why iOS builds stay on Bitrise?",
    ),
    f(
        "bundle-id",
        "iOS bundle id is com.acme.shop; Android applicationId com.acme.shop.android",
        tags=("release",),
        identifier="com.acme.shop",
    ),
    f(
        "min-sdk",
        "Android minSdk is 26 (Android 8.0); below that Play shows the app as incompatible",
        tags=("android",),
        paraphrase="what is the oldest phone OS release the app still installs on for Google devices?",
    ),
    f(
        "crash-hermes",
        "Crash `SIGSEGV in libhermes.so` on Android 9 Samsung devices comes from the old Reanimated 2; "
        "fixed by Reanimated 3.6",
        "finding",
        tags=("crash",),
        identifier="SIGSEGV in libhermes.so",
    ),
    f(
        "fastlane",
        "Release builds: `bundle exec fastlane ios beta` uploads to TestFlight; `fastlane android "
        "internal` to the Play internal track",
        tags=("release",),
        identifier="fastlane ios beta",
    ),
    f(
        "push-provider",
        "Push notifications go through Firebase Cloud Messaging on both platforms (APNs key via FCM)",
        tags=("push",),
        paraphrase="which service delivers the alerts that pop up on users' phones?",
    ),
    f(
        "deeplinks",
        "Deep links: https://shop.example.com/app/* via Universal Links and App Links; the "
        "apple-app-site-association file is served by the storefront",
        tags=("links",),
        identifier="apple-app-site-association",
    ),
    f(
        "mob-owner",
        "Yuki Tanaka owns the mobile app releases and holds the App Store Connect admin role",
        tags=("release",),
        who="who can submit a build to Apple for review?",
    ),
    f(
        "review-reject",
        "App Store rejected build 4.12.0 (412) under guideline 3.1.1: the gift card screen linked to web checkout",
        "blocker",
        tags=("release",),
        identifier="guideline 3.1.1",
        paraphrase="why did Apple turn down the last submission?",
    ),
    f(
        "offline",
        "Cart works offline: actions are queued in MMKV and replayed on reconnect",
        tags=("cart",),
        paraphrase="what happens to basket changes made without a connection?",
    ),
    f(
        "sentry-rn",
        "Sentry project mobile-rn; source maps are uploaded by the `sentry-cli releases` step in CI",
        tags=("crash",),
        identifier="mobile-rn",
    ),
    f(
        "feature-flags-mob",
        "Mobile feature flags come from LaunchDarkly with a 30 s polling fallback when streaming fails",
        tags=("flags",),
        paraphrase="how does the app learn that a toggle changed if the live connection drops?",
    ),
    f(
        "a11y-mob",
        "Every tappable element needs an accessibilityLabel; the lint rule is react-native-a11y/has-label",
        "decision",
        tags=("a11y",),
        identifier="react-native-a11y/has-label",
        who="which agent added the accessibility label lint rule?",
        agent=CU,
    ),
    f(
        "ios-signing",
        "iOS signing uses fastlane match with the certificates repo acme/ios-certs (readonly in CI)",
        tags=("release",),
        paraphrase="how are the Apple code-signing identities shared between machines?",
    ),
    f(
        "biometric",
        "Login with Face ID / fingerprint uses react-native-keychain; the token never leaves the keychain",
        tags=("auth",),
        paraphrase="where is the session secret kept on the device when people log in with their face?",
    ),
    f(
        "anr",
        "ANR on the product list is caused by synchronous image decoding; switched to FastImage",
        "finding",
        tags=("android", "perf"),
        paraphrase="why did the app freeze when scrolling through items on Android?",
    ),
    f(
        "store-notes",
        "Release notes are written by Hannah Schulz in Lokalise",
        tags=("release",),
        who="who writes the what's-new text for the stores?",
    ),
    f(
        "expo",
        "We do not use Expo managed workflow; bare React Native with expo-modules for a few packages",
        "decision",
        tags=("arch",),
        who="which agent recorded that we stay on bare React Native?",
        agent=GM,
    ),
    f(
        "api-base",
        "The app talks to api.shop.example.com/v3; staging builds point at api.staging.shop.example.dev",
        tags=("api",),
        identifier="api.staging.shop.example.dev",
    ),
    f(
        "codepush",
        "Over-the-air updates are disabled since the App Store review note in November",
        "decision",
        tags=("release",),
        paraphrase="can we ship JavaScript fixes without a store release?",
    ),
    f(
        "dark-mode",
        "Dark mode follows the system setting; the in-app toggle was removed",
        "decision",
        tags=("ui",),
        paraphrase="can users pick light or dark appearance inside the app?",
    ),
    f(
        "android-crash",
        "Play Console: java.lang.IllegalStateException: Fragment not attached to a context in CheckoutWebViewFragment",
        "blocker",
        tags=("crash", "android"),
        identifier="Fragment not attached to a context",
    ),
    f(
        "beta-group",
        "External TestFlight group 'Friends & Family' has 180 testers; new builds go there after QA",
        tags=("release",),
        paraphrase="how many outside people try pre-release iPhone versions?",
    ),
    f(
        "analytics-mob",
        "App analytics are Amplitude; event names are snake_case and reviewed by the data team",
        tags=("analytics",),
        paraphrase="which product analytics service does the app send events to?",
    ),
)

CHAINS = (
    chain(
        "app-version",
        "what is the current version of the app in the stores?",
        v("App 4.11.2 live on both stores", agent=CU),
        v("4.12.1 approved and live on iOS and Android", "unmarked", agent=GM),
        v("App 4.13.0 released to 100% on both stores", "unmarked", agent=CU),
        tags=("release",),
    ),
    chain(
        "rn-version",
        "which React Native version does the app use?",
        v("App is on React Native 0.72", agent=CC),
        v("Upgraded the app to React Native 0.73", "supersede", agent=CU),
        v("React Native 0.74 with the new architecture enabled on Android", "supersede", agent=GM),
        tags=("arch",),
    ),
    chain(
        "target-sdk",
        "what targetSdk does the Android build use?",
        v("Android targetSdk 33", agent=CU),
        v("targetSdk bumped to 34 for the Play deadline", "supersede", agent=CC),
        tags=("android",),
    ),
    chain(
        "crash-free",
        "what is the crash-free users rate?",
        v("Crash-free users at 99.1% this week", agent=GM),
        v("Crash-free users back to 99.6% after 4.12.1", "unmarked", agent=GM),
        tags=("crash",),
    ),
    chain(
        "ios-min",
        "which iOS version is the minimum?",
        v("Minimum iOS is 14.0", agent=CU),
        v("Raised the minimum iOS to 15.0; 14 was under 1% of users", "supersede", agent=CC),
        tags=("ios",),
    ),
    chain(
        "rollout",
        "how far is the staged rollout on Google Play?",
        v("Android 4.13.0 staged rollout at 20%", agent=GM),
        v("Android rollout of 4.13.0 paused at 20% because of the checkout crash", "supersede", agent=GM),
        v("Android 4.13.0 rollout resumed and now at 100%", "supersede", agent=CU),
        tags=("release",),
    ),
    chain(
        "nav-lib",
        "which navigation library does the app use?",
        v("Navigation is React Navigation 6", agent=CC),
        v("Moved navigation to Expo Router (file-based) on top of React Navigation 7", "unmarked", agent=GM),
        tags=("arch",),
    ),
    chain(
        "state-mob",
        "how is server state cached in the app?",
        v("Server state in the app is cached with Apollo Client", agent=CU),
        v("Replaced Apollo Client with TanStack Query for server state", "supersede", agent=GM),
        tags=("arch",),
    ),
)

HOPS = (
    hop("who holds the admin role for the store where build 412 was rejected?", "review-reject", "mob-owner"),
    hop("which Sentry project should I look at for the crash in libhermes.so?", "crash-hermes", "sentry-rn"),
    hop("which host serves the file that makes Universal Links work?", "deeplinks", "aasa-host"),
    hop("which TestFlight group gets the builds uploaded by fastlane ios beta?", "fastlane", "beta-group"),
    hop("which command pulls the texts Hannah writes into the store listing?", "store-notes", "lokalise"),
    hop("which activity hosts the fragment that crashes with 'not attached to a context'?", "android-crash", "webview"),
)

EXTRA = (
    f(
        "aasa-host",
        "The storefront serves /.well-known/ files from shop.example.com via a Next.js route",
        tags=("links",),
    ),
    f("lokalise", "`fastlane deliver` pulls the store texts from Lokalise before every submission", tags=("release",)),
    f(
        "webview",
        "CheckoutWebViewFragment lives in MainActivity and loads the web checkout for gift cards",
        tags=("android",),
    ),
)

NOTES = (
    *notes(
        "finding",
        "Hermes bytecode builds are 30% smaller than JSC for our bundle",
        "iOS simulators on the CI Macs are slow to boot; pre-boot them in the job",
        "The product images are 2x too large for the list view; request the 320 preset",
        "Android back button closes the app from the cart instead of going home",
    ),
    *notes(
        "action-item",
        "Add a force-update screen for versions below 4.0",
        "Check whether the old FCM legacy API key is still referenced anywhere",
        "Remove the onboarding carousel A/B test code",
    ),
    *notes(
        "fact",
        "The app has about 420k monthly active users, 60% on iOS",
        "Mobile CI runs on Bitrise for iOS and GitHub Actions for Android",
        "The design files for the app are in the Figma project 'Shop App 2026'",
    ),
)

SCREENS = (
    "product list",
    "product detail",
    "cart",
    "checkout",
    "order history",
    "account",
    "search",
    "wishlist",
    "store finder",
    "onboarding",
    "loyalty card",
    "returns",
    "notifications settings",
    "gift cards",
)
ISSUES = (
    "layout breaks with the largest font size",
    "spinner never stops when offline",
    "back swipe loses the scroll position",
    "prices show without the currency on Android 10",
    "images load twice on slow connections",
    "VoiceOver reads the buttons in the wrong order",
    "keyboard covers the input on small screens",
    "pull to refresh triggers twice",
    "the empty state shows for a second before content",
    "dark mode text is unreadable on the banner",
    "tapping twice opens the screen twice",
    "the badge count does not update after logout",
)


def fill(rng: Random) -> list[Fact]:
    """Bug notes per screen, with a MOB ticket number."""
    out: list[Fact] = []
    for screen in SCREENS:
        for issue in rng.sample(ISSUES, 2):
            n = rng.randint(100, 999)
            lead = rng.choice(
                ("MOB-{n}: {screen} — {issue}", "{Screen}: {issue} (MOB-{n})", "Filed MOB-{n}: on {screen}, {issue}")
            )
            out.append(
                Fact(
                    f"mob-{n}-{len(out)}",
                    lead.format(n=n, screen=screen, Screen=screen.capitalize(), issue=issue),
                    "blocker",
                    ("bug",),
                )
            )
    return out


MORE_NOTES = (
    *notes(
        "finding",
        "App start time is 2.1 s cold on a Pixel 6a; half of it is the JS bundle load",
        "Users on Android Go devices get killed in the background during 3-D Secure",
        "The iOS widget extension doubles the archive time on CI",
        "Push opt-in rate is 54% on iOS after moving the prompt to after the first order",
        "Flipper slows the debug build by 20%; disabled by default now",
        "The checkout WebView loses cookies on Android 8 after an app update",
    ),
    *notes(
        "decision",
        "All new screens are written as function components with hooks",
        "Images in the app come only through the CDN presets, never original sizes",
        "No third-party SDK without a privacy manifest on iOS",
    ),
    *notes(
        "action-item",
        "Update the App Store screenshots for the new design",
        "Remove the legacy AsyncStorage migration after 5.0",
        "Ask Yuki about the expedited review for the holiday release",
    ),
    *notes(
        "fact",
        "The app's average rating is 4.6 on iOS and 4.3 on Google Play",
        "About 8% of app users use the store finder each week",
        "The mobile team is four engineers and one QA",
    ),
)

DOMAIN = Domain("mobile", (CU, GM, CC), FACTS + EXTRA, CHAINS, HOPS, NOTES + MORE_NOTES, fill)
