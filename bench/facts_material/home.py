"""A home and family assistant: heating, school runs, appointments, chores, the house's devices."""

from __future__ import annotations

from random import Random

from bench.facts_material import Domain, Fact, chain, f, hop, notes, v

HA, GM, CC = "home-assistant", "gemini-cli", "claude-code"

FACTS = (
    f(
        "plumber",
        "Plumber: Sr. Nuno (Canalizações Nuno), comes within a day for leaks",
        tags=("house",),
        who="who do we call when a pipe leaks?",
    ),
    f(
        "football",
        "Leo's football coach is Mister Paulo; training Tuesdays 18:00 at the club field",
        tags=("kids",),
        who="who coaches our son's football team?",
    ),
    f(
        "tado",
        "Set up the Tado thermostats with geofencing: heating drops to 16 °C when everyone is out",
        tags=("heating",),
        agent=GM,
        who="which agent configured the away mode of the heating?",
        paraphrase="what happens to the radiators when nobody is home?",
    ),
    f(
        "bins",
        "Recycling bins go out Sunday evening; the council collects on Monday mornings",
        tags=("chores",),
        paraphrase="when do I put the rubbish containers on the street?",
    ),
    f(
        "school-pickup",
        "Leo's school ends at 15:30; pick-up is at the side gate on Rua das Flores",
        tags=("kids",),
        paraphrase="what time do I need to collect the boy from class and where?",
    ),
    f(
        "dentist",
        "Dentist for Maya: Dr. Carvalho, check-up every 6 months, last one 10 January",
        tags=("health",),
        paraphrase="when was our daughter's last teeth appointment?",
        who="which doctor looks after Maya's teeth?",
    ),
    f(
        "wifi-guest",
        "Guest Wi-Fi network is 'casa-guest' on the Fritz!Box; the password is on the fridge card, not stored here",
        tags=("network",),
        identifier="casa-guest",
    ),
    f(
        "plants",
        "Water the fiddle-leaf fig every 10 days; the orchids get ice cubes on Sundays",
        tags=("plants",),
        paraphrase="how often does the big potted tree in the living room need water?",
    ),
    f(
        "boiler",
        "Boiler is a Vaillant ecoTEC plus; annual service due in October, engineer from GasCare (ref GC-55812)",
        tags=("house",),
        identifier="GC-55812",
        paraphrase="when is the heating system due for its yearly maintenance?",
    ),
    f(
        "swim",
        "Maya has swimming lessons on Wednesdays 17:00 at the municipal pool; bring the blue bag",
        tags=("kids",),
        paraphrase="which afternoon is our daughter in the pool?",
    ),
    f(
        "allergy",
        "Leo is allergic to penicillin — tell any doctor",
        tags=("health",),
        paraphrase="which antibiotic must our son never be given?",
    ),
    f(
        "car-service",
        "Car (Renault Zoe, plate AA-12-BC) inspection due 3 May; book at the dealer in Oeiras",
        tags=("car",),
        identifier="AA-12-BC",
        paraphrase="when does the electric car need its roadworthiness test?",
    ),
    f(
        "grandma",
        "Grandma Rosa visits the first Sunday of each month; she can't do stairs, use the ground floor room",
        tags=("family",),
        paraphrase="which room should we prepare when their grandmother comes over?",
    ),
    f(
        "alarm-code",
        "House alarm is an Ajax hub; the code was changed on 2 February (code not stored here)",
        tags=("security",),
        paraphrase="when did we last change the burglar alarm PIN?",
    ),
    f(
        "robot-vacuum",
        "Roborock S8 cleans downstairs only; the kids' rooms are no-go zones in its app",
        tags=("devices",),
        identifier="Roborock S8",
        who="which agent set up the no-go zones for the vacuum cleaner?",
        agent=GM,
    ),
    f(
        "insurance",
        "Home insurance with Fidelidade, policy HC-2209-77, renews 1 September",
        tags=("admin",),
        identifier="HC-2209-77",
    ),
    f(
        "piano",
        "Leo's piano teacher is Ana Sousa; lessons Saturday 11:00 at her flat, 25 EUR cash",
        tags=("kids",),
        who="who teaches our son the piano?",
    ),
    f(
        "babysitter",
        "Babysitter: Carla, available Friday evenings, book 2 days ahead",
        tags=("kids",),
        who="who can watch the children on a Friday night?",
    ),
    f(
        "lights",
        "Living room lights dim to 30% at 21:00 (Hue scene 'Evening')",
        tags=("devices",),
        identifier="Hue scene Evening",
    ),
    f(
        "solar",
        "Solar panels (4.2 kWp) were installed in March 2025; inverter is a Huawei SUN2000",
        tags=("energy",),
        paraphrase="how big is the photovoltaic system on the roof?",
    ),
    f(
        "meal-plan",
        "Meal plan: fish on Fridays, pizza night Saturday, no mushrooms (Maya)",
        tags=("food",),
        paraphrase="what do we usually eat at the end of the week?",
    ),
    f(
        "water-meter",
        "Water meter reading sent to EPAL on the 20th of every month",
        tags=("admin",),
        paraphrase="when is the monthly utility reading due?",
    ),
    f(
        "school-trip",
        "Maya's class trip to Sintra on 14 March needs the signed form and 12 EUR by 7 March",
        tags=("kids",),
        paraphrase="what do I have to hand in before our daughter's excursion?",
    ),
    f(
        "pediatrician",
        "Dr. Inês Pinto is the children's pediatrician at Clínica do Parque",
        tags=("health",),
        who="which doctor do we call when the kids are sick?",
    ),
    f(
        "dog",
        "Bolt (the dog) eats twice a day, 200 g each; vet is Dr. Matos, vaccines due in June",
        tags=("pets",),
        paraphrase="how much food does our pet get per meal?",
    ),
    f(
        "garage",
        "Garage door opener code changed on 28 January; remote battery is CR2032",
        tags=("house",),
        identifier="CR2032",
    ),
    f(
        "shopping",
        "Weekly grocery order from Continente online, delivery slot Thursday 19-21h",
        tags=("food",),
        paraphrase="when does the supermarket delivery arrive?",
    ),
)

CHAINS = (
    chain(
        "study-heat",
        "what temperature should the heating be set to in the study?",
        v("Study heating set to 19 °C on weekdays", agent=HA),
        v("Keep the study at 21 °C during work hours — 19 was too cold for afternoon calls", "unmarked", agent=HA),
        tags=("heating",),
    ),
    chain(
        "bedroom-heat",
        "what is the night temperature in the kids' bedrooms?",
        v("Kids' bedrooms: 18 °C at night", agent=HA),
        v("Kids' bedrooms lowered to 17 °C at night (pediatrician's advice)", "supersede", agent=HA),
        tags=("heating",),
    ),
    chain(
        "swim-day",
        "which day is Leo's swimming?",
        v("Leo swims on Mondays at 18:00", agent=HA),
        v("Leo's swimming moved to Thursdays 17:30", "unmarked", agent=HA),
        tags=("kids",),
    ),
    chain(
        "internet",
        "who is our internet provider?",
        v("Internet is MEO fibre, 500 Mbps", agent=GM),
        v("Switched internet to NOS fibre 1 Gbps; MEO contract ends in April", "supersede", agent=HA),
        tags=("admin",),
    ),
    chain(
        "cleaner",
        "which day does the cleaner come?",
        v("Cleaner (Dona Fátima) comes on Tuesdays", agent=HA),
        v("Dona Fátima comes on Fridays now", "unmarked", agent=HA),
        tags=("chores",),
    ),
    chain(
        "bedtime",
        "what time is Maya's bedtime?",
        v("Maya's bedtime is 20:00 on school nights", agent=HA),
        v("Maya goes to bed at 20:30 on school nights since she turned 9", "supersede", agent=GM),
        tags=("kids",),
    ),
    chain(
        "energy-tariff",
        "which electricity tariff are we on?",
        v("Electricity: EDP simple tariff", agent=GM),
        v("Moved to the EDP bi-hourly tariff (cheap after 22:00) to charge the car overnight", "unmarked", agent=HA),
        tags=("energy",),
    ),
    chain(
        "vacuum-time",
        "when does the robot vacuum run?",
        v("Robot vacuum runs at 10:00 on weekdays", agent=GM),
        v("Robot vacuum now runs at 13:00 so it doesn't wake the baby's nap", "supersede", agent=HA),
        tags=("devices",),
    ),
)

HOPS = (
    hop(
        "what's the policy number of the insurance that covers the house with the Vaillant boiler?",
        "boiler",
        "insurance",
    ),
    hop("who teaches the child who is allergic to penicillin to play music?", "allergy", "piano"),
    hop("where is the pool where Maya has her Wednesday lessons?", "swim", "pool"),
    hop("which school does the boy who is allergic to penicillin go to?", "allergy", "school"),
    hop("what battery does the remote for the door whose code changed in January take?", "garage", "garage-remote"),
    hop("when is the car with plate AA-12-BC charged cheapest?", "car-service", "car-charge"),
)

EXTRA = (
    f("pool", "The municipal pool is Piscina Municipal de Algés, entrance on the river side", tags=("kids",)),
    f("school", "Leo's school is Escola Básica de Miraflores, class 2B", tags=("kids",)),
    f("garage-remote", "The garage remote is a Hörmann HSE 4", tags=("house",)),
    f("car-charge", "The Zoe charges on the wallbox in the garage, scheduled after 22:00", tags=("car",)),
)

NOTES = (
    *notes(
        "fact",
        "The fuse box is in the hallway cupboard behind the coats",
        "The spare house key is with the neighbours at number 14",
        "Maya's shoe size is 33; Leo's is 29",
        "The dishwasher salt goes in when the light on the left turns on",
        "The family calendar is the shared Google calendar 'Casa'",
        "The printer in the study is a Brother HL-L2350DW; toner TN-2420",
        "The heat pump's outdoor unit must be kept clear of leaves",
    ),
    *notes(
        "action-item",
        "Renew Maya's citizen card before the summer trip",
        "Buy a new filter for the kitchen extractor hood",
        "Call the plumber about the dripping bathroom tap",
        "Order birthday present for Leo's friend Tomás (party 22 Feb)",
    ),
    *notes(
        "preference",
        "The kids may watch 1 hour of screen time on school days, 2 at weekends",
        "No sugary cereals during the week",
    ),
)

ROOMS = ("living room", "kitchen", "hallway", "Leo's room", "Maya's room", "bathroom", "garage", "terrace")
DEVICES = {
    "motion sensor": (
        "Added a motion sensor in {the_room} ({brand})",
        "{Room} motion sensor: battery replaced",
        "Automation: motion in {the_room} after 23:00 turns on the hallway light at 10%",
    ),
    "smart plug": (
        "Put a {brand} smart plug on the lamp in {the_room}",
        "The smart plug in {the_room} is offline again — reset it by holding the button 10 s",
    ),
    "temperature sensor": (
        "Added a {brand} temperature sensor in {the_room}",
        "The temperature sensor in {the_room} reads 2 °C high; offset set in the app",
    ),
    "door contact": (
        "Door contact on {the_room} door ({brand}) notifies when left open 10 min",
        "{Room} door contact: battery replaced",
    ),
    "ceiling light": (
        "{Room} ceiling light replaced with a {brand} bulb",
        "The ceiling light in {the_room} is offline again — power-cycle it 5 times to re-pair",
    ),
    "smoke detector": ("Smoke detector in {the_room} tested, works", "{Room} smoke detector: battery replaced"),
}


def fill(rng: Random) -> list[Fact]:
    """Smart-home device notes: a room, a device, something done to it."""
    out: list[Fact] = []
    for room in ROOMS:
        for dev in rng.sample(sorted(DEVICES), 3):
            brand = rng.choice(("Aqara", "Shelly", "IKEA", "Philips Hue", "Eve"))
            the_room = room if "'" in room else f"the {room}"
            text = rng.choice(DEVICES[dev]).format(Room=room[0].upper() + room[1:], the_room=the_room, brand=brand)
            out.append(Fact(f"dev-{len(out)}", text[0].upper() + text[1:], "history", ("devices",)))
    return out


MORE_NOTES = (
    *notes(
        "fact",
        "The kids' passports expire in 2028; Maya's citizen card in August",
        "Bolt is microchipped; the chip number is on the vet's card in the blue folder",
        "The attic ladder sticks in humid weather; push the left side first",
        "The washing machine's 'eco 40-60' program takes 3 h 20",
        "The neighbours' kids (Sara and Duarte) are in Leo's class",
        "Recipe: Grandma Rosa's custard tarts use 6 yolks and lemon zest",
        "The router is in the hallway cupboard; restarting it fixes the TV streaming",
        "Maya's best friend is Beatriz; her mum is Joana (phone in contacts)",
    ),
    *notes(
        "action-item",
        "Book the chimney sweep before winter",
        "Replace the smoke detector battery in the hallway",
        "Sign Leo's homework notebook every Friday",
        "Pay the school canteen for March",
        "Buy a birthday card for Grandma Rosa (turns 78 on 9 April)",
    ),
    *notes(
        "preference",
        "Saturday mornings are for the farmers' market, no appointments",
        "Prefer the pharmacy on Avenida da República; it opens at 8",
        "The family prefers the beach at Carcavelos on summer weekends",
    ),
)

DOMAIN = Domain("home", (HA, GM), FACTS + EXTRA, CHAINS, HOPS, NOTES + MORE_NOTES, fill)
