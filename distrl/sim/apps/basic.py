"""Everyday apps that general tasks open: Gmail, Maps, Photos, Contacts, Phone, Messages, Calendar, ...

Each is a ``ListApp`` (``list_app``) of its ``ListSpec`` here: its name, first screen's sections of
plausible items, search, tabs and form. ``basic_apps()`` adds Camera and Calculator (their own modules)
in launcher order.
"""

from __future__ import annotations

from distrl.sim.app import App
from distrl.sim.apps.calculator import Calculator
from distrl.sim.apps.camera import Camera
from distrl.sim.apps.list_app import ListApp, ListSpec
from distrl.sim.ui import Colour

__all__ = ["BASIC_APPS", "ListApp", "ListSpec", "basic_apps"]


_BLUE: Colour = (26, 115, 232)

# fmt: off
BASIC_APPS: tuple[ListSpec, ...] = (
    ListSpec(
        package="com.google.android.gm", activity=".ConversationListActivityGmail", label="Gmail", icon="M",
        colour=(234, 67, 53), slug="gmail", title="Gmail", search_hint="Search in mail",
        sections=(
            ("Primary", (
                ("Google", "Security alert: new sign-in on Pixel 6"),
                ("Maria Lopez", "Dinner on Friday? Let me know by Thursday"),
                ("Amazon.com", "Your order has shipped"),
                ("GitHub", "[distrl] Pull request merged"),
                ("Kevin Chen", "Photos from the weekend"),
                ("Calendar", "Reminder: Dentist appointment tomorrow"),
                ("LinkedIn", "You appeared in 12 searches this week"),
                ("Netflix", "New arrivals this week"),
            )),
        ),
        form=("Compose", ("To", "Subject", "Compose email"), "Send"), fab_text="Compose",
        dialog=("gmail_meet", "Meet in Gmail", "Start or join video meetings right from Gmail.", ("Got it",)),
        p_loading=0.3, results=("{q}", "Re: {q}", "Fwd: {q}", "{q} - receipt"),
    ),
    ListSpec(
        package="com.google.android.apps.maps", activity="com.google.android.maps.MapsActivity", label="Maps",
        icon="Ma", colour=(52, 168, 83), slug="maps", title="Maps", search_hint="Search here", avatars=False,
        sections=(
            ("Explore nearby", (
                ("Restaurants", "Open now - 4.4 average"),
                ("Coffee", "12 places within 1 mi"),
                ("Gas", "Lowest $3.89/gal"),
                ("Groceries", "Open until 10 PM"),
                ("Hotels", "From $129/night"),
            )),
            ("Recent", (
                ("Home", "1600 Amphitheatre Pkwy, Mountain View"),
                ("Work", "345 Spear St, San Francisco"),
                ("San Francisco Airport (SFO)", "San Francisco, CA 94128"),
            )),
        ),
        tabs=("Explore", "Go", "Saved", "Contribute"),
        dialog=("maps_location", "Turn on location accuracy",
                "For a better experience, turn on device location, which uses Google's location service.",
                ("No thanks", "Turn on")),
        p_loading=0.3, results=("{q}", "{q} - 0.4 mi", "{q} - 1.2 mi", "{q} - 2.8 mi"),
    ),
    ListSpec(
        package="com.google.android.apps.photos", activity=".home.HomeActivity", label="Photos", icon="Ph",
        colour=(244, 160, 0), slug="photos", title="Google Photos", search_hint="Search your photos",
        sections=(
            ("Today", (("Beach sunset", "6 photos - Half Moon Bay"), ("Coffee with Sam", "2 photos"))),
            ("Yesterday", (("Hiking trip", "24 photos - Mount Tam"), ("Screenshots", "3 items"))),
            ("Oct 10", (("Birthday party", "18 photos and 2 videos"), ("Receipts", "4 photos"))),
        ),
        tabs=("Photos", "Search", "Library"),
        dialog=("photos_backup", "Back up your photos?",
                "Keep your photos and videos safe by backing them up to your Google Account.",
                ("Not now", "Back up")),
    ),
    ListSpec(
        package="com.google.android.contacts", activity="com.android.contacts.activities.PeopleActivity",
        label="Contacts", icon="Co", colour=(66, 133, 244), slug="contacts", title="Contacts",
        search_hint="Search contacts",
        sections=(
            ("A", (("Alex Johnson", "(650) 555-0134"), ("Amy Park", "(415) 555-0172"))),
            ("B", (("Ben Carter", "(212) 555-0198"),)),
            ("D", (("David Kim", "(310) 555-0110"),)),
            ("E", (("Emma Wilson", "(650) 555-0157"),)),
            ("M", (("Maria Lopez", "(408) 555-0123"), ("Mom", "(650) 555-0100"))),
            ("S", (("Sam Rivera", "(415) 555-0188"),)),
        ),
        form=("Create contact", ("First name", "Last name", "Phone"), "Save"),
        dialog=("contacts_sync", "Sync contacts?", "Back up and sync your contacts with your Google Account.",
                ("Not now", "Turn on")),
    ),
    ListSpec(
        package="com.google.android.dialer", activity=".extensions.GoogleDialtactsActivity", label="Phone",
        icon="P", colour=(30, 142, 62), slug="dialer", title="Phone", search_hint="Search contacts & places",
        sections=(
            ("Recents", (
                ("Mom", "Mobile - 2 hours ago"),
                ("Maria Lopez", "Missed call - Yesterday"),
                ("(800) 555-0199", "Spam risk - Yesterday"),
                ("Ben Carter", "Outgoing - Oct 12"),
                ("David Kim", "Incoming - Oct 11"),
            )),
        ),
        tabs=("Favorites", "Recents", "Contacts"), form=("Keypad", ("Phone number",), "Call"),
        dialog=("dialer_default", "Set Phone as default app?",
                "Set Phone as your default caller ID & spam app to see who's calling.",
                ("Cancel", "Set as default")),
    ),
    ListSpec(
        package="com.google.android.apps.messaging", activity=".ui.ConversationListActivity",
        label="Messages", icon="Me", colour=_BLUE, slug="messages", title="Messages",
        search_hint="Search conversations",
        sections=(
            ("", (
                ("Mom", "Call me when you land"),
                ("Maria Lopez", "See you at 7!"),
                ("Sam Rivera", "Haha that's great"),
                ("22000", "Your verification code is 482913"),
                ("Kevin Chen", "Sent a photo"),
                ("Pharmacy", "Your prescription is ready"),
            )),
        ),
        form=("New message", ("To", "Text message"), "Send"), fab_text="Start chat",
        dialog=("messages_rcs", "Chat features", "Send and receive messages over Wi-Fi and mobile data.",
                ("Later", "Turn on")),
    ),
    ListSpec(
        package="com.google.android.calendar", activity="com.android.calendar.AllInOneActivity",
        label="Calendar", icon="31", colour=(66, 133, 244), slug="calendar", title="October 2023",
        search_hint="Search events", avatars=False,
        sections=(
            ("Sun, Oct 15", (("Brunch with Maria", "11:00 AM - 12:30 PM"), ("Call Mom", "6:00 - 6:30 PM"))),
            ("Mon, Oct 16", (("Team standup", "9:30 - 9:45 AM"), ("Dentist", "2:00 - 3:00 PM"))),
            ("Tue, Oct 17", (("Gym", "7:00 - 8:00 AM"),)),
            ("Wed, Oct 18", (("Project review", "1:00 - 2:00 PM"), ("Yoga class", "6:30 - 7:30 PM"))),
        ),
        form=("New event", ("Add title", "Location"), "Save"),
        dialog=("calendar_welcome", "Welcome to Google Calendar",
                "Events from Gmail and your other calendars show up here.", ("Got it",)),
    ),
    ListSpec(
        package="com.google.android.youtube",
        activity="com.google.android.apps.youtube.app.WatchWhileActivity", label="YouTube", icon="YT",
        colour=(255, 0, 0), slug="youtube", title="YouTube",
        search_hint="Search YouTube",
        sections=(
            ("", (
                ("Lofi hip hop radio - beats to relax/study to", "Lofi Girl - 38K watching"),
                ("How to make perfect pancakes", "Tasty - 2.1M views - 3 years ago"),
                ("Top 10 hidden features of Android 13", "Tech Tips - 812K views"),
                ("NBA highlights: Warriors vs Lakers", "NBA - 1.4M views - 1 day ago"),
                ("10-minute morning yoga", "Yoga with Adriene - 9M views"),
                ("Learn Python in 1 hour", "Programming with Mosh - 15M views"),
            )),
        ),
        tabs=("Home", "Shorts", "Subscriptions", "Library"),
        dialog=("youtube_premium", "Try YouTube Premium", "Ad-free videos, downloads and background play.",
                ("No thanks", "Try it free")),
        p_loading=0.35, results=("{q}", "{q} - full video", "Best of {q}", "{q} explained"),
    ),
    ListSpec(
        package="com.android.vending", activity="com.google.android.finsky.activities.MainActivity",
        label="Play Store", icon="PS", colour=(1, 135, 95), slug="playstore", title="Google Play",
        search_hint="Search for apps & games",
        sections=(
            ("Recommended for you", (
                ("Spotify: Music and Podcasts", "Music & Audio - 4.4 stars"),
                ("Duolingo: Language Lessons", "Education - 4.7 stars"),
                ("Instagram", "Social - 4.1 stars"),
                ("Candy Crush Saga", "Casual - 4.6 stars"),
                ("Google Drive", "Productivity - 4.4 stars"),
                ("WhatsApp Messenger", "Communication - 4.3 stars"),
            )),
        ),
        tabs=("Apps", "Games", "Books"),
        dialog=("play_update", "Updates available", "12 apps have updates. Update them now over Wi-Fi?",
                ("Not now", "Update all")),
        p_loading=0.3, results=("{q}", "{q} Lite", "{q} - Editor's choice", "{q} alternatives"),
    ),
    ListSpec(
        package="com.google.android.documentsui", activity="com.android.documentsui.files.FilesActivity",
        label="Files", icon="F", colour=_BLUE, slug="files", title="Files", search_hint="Search files",
        avatars=False,
        sections=(
            ("Categories", (
                ("Images", "142 items"), ("Videos", "18 items"), ("Audio", "36 items"),
                ("Documents", "27 items"), ("Downloads", "9 items"),
            )),
            ("Recent files", (
                ("boarding_pass.pdf", "212 KB - Oct 14"),
                ("IMG_20231014_1830.jpg", "3.1 MB - Oct 14"),
                ("notes.txt", "2 KB - Oct 12"),
            )),
        ),
    ),
)
# fmt: on
"""The list apps, in launcher order (Camera and Calculator are separate classes)."""


def basic_apps() -> list[App]:
    """A fresh instance of every everyday app, in launcher order."""
    apps: dict[str, App] = {spec.label: ListApp(spec) for spec in BASIC_APPS}
    apps.update(Camera=Camera(), Calculator=Calculator())
    order = ("Gmail", "Maps", "Photos", "Camera", "Contacts", "Phone", "Messages", "Calendar", "YouTube",
             "Play Store", "Calculator", "Files")  # fmt: skip
    return [apps[label] for label in order]
