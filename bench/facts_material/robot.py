"""A robot lab: a mobile manipulator (arm on a wheeled base), its ROS 2 stack, calibration, safety, the lab."""

from __future__ import annotations

from random import Random

from bench.facts_material import Domain, Fact, chain, f, hop, notes, v

RB, CX, CC = "lab-robot", "codex", "claude-code"

FACTS = (
    f(
        "hw-tech",
        "Lab technician Pieter de Vries handles hardware repairs and spare parts for the robot",
        tags=("people",),
        who="who fixes broken hardware on the robot?",
    ),
    f(
        "nav-review",
        "Reviewed Amira's Nav2 PR: the MPPI controller replaces DWB, merged after the door tests",
        "decision",
        agent=CX,
        tags=("nav",),
        who="which agent reviewed the navigation controller change?",
        paraphrase="which local trajectory follower does the base use now?",
    ),
    f(
        "dataset-owner",
        "Jonas curates the grasp dataset (12k labelled grasps) on gpu-lab-1",
        tags=("data",),
        who="who looks after the labelled grasping data?",
    ),
    f(
        "estop",
        "E-stop test passed on 12 Feb: both the pendant and the base button cut motor power in under 200 ms",
        "history",
        tags=("safety",),
        paraphrase="did the emergency halt buttons work the last time they were checked?",
    ),
    f(
        "ros-distro",
        "The robot runs ROS 2 Humble on Ubuntu 22.04 (Jetson Orin, JetPack 6)",
        tags=("ros",),
        paraphrase="which robotics middleware release is on the onboard computer?",
    ),
    f(
        "cmd-vel",
        "Base velocity commands go to /base/cmd_vel (geometry_msgs/Twist), published by the Nav2 controller",
        tags=("ros",),
        identifier="/base/cmd_vel",
    ),
    f(
        "lidar-topic",
        "The front lidar publishes /scan_front at 15 Hz; the rear one /scan_rear",
        tags=("sensors",),
        identifier="/scan_front",
    ),
    f(
        "gripper-slip",
        "Finding: the gripper slips on glossy boxes above 1.2 kg; silicone pads fixed it",
        "finding",
        tags=("gripper",),
        paraphrase="why did the hand drop shiny packages, and what solved it?",
    ),
    f(
        "nav2-param",
        "Nav2 inflation radius 0.45 m in config/nav2_params.yaml; smaller makes it clip door frames",
        tags=("nav",),
        identifier="config/nav2_params.yaml",
        paraphrase="how much clearance around obstacles does the path planner keep?",
    ),
    f(
        "lab-owner",
        "Experiment proposals for the robot go to Prof. Henrik Lund, the lab head, for approval",
        tags=("lab",),
        who="who has to approve a new experiment on the robot?",
    ),
    f(
        "charging",
        "Docking station is at the east wall; the robot docks itself below 20% battery",
        tags=("power",),
        paraphrase="when does the machine go back to recharge on its own?",
    ),
    f(
        "joint-limit",
        "Joint 4 soft limit set to ±165° after the cable harness snagged at 170°",
        "decision",
        tags=("arm",),
        paraphrase="why can't the wrist rotate all the way round?",
        who="which agent changed the wrist rotation limit?",
        agent=RB,
    ),
    f(
        "bag-cmd",
        "Record a run with `ros2 bag record -o runs/$(date +%F) /scan_front /odom /tf`",
        tags=("ros",),
        identifier="ros2 bag record",
    ),
    f(
        "tf-error",
        'Error "Lookup would require extrapolation into the future" in tf2 means the Orin clock drifted; '
        "chrony must sync from the lab server",
        "finding",
        tags=("ros",),
        identifier="Lookup would require extrapolation into the future",
    ),
    f(
        "camera",
        "Wrist camera is a RealSense D405; its depth is unreliable under 7 cm",
        tags=("sensors",),
        paraphrase="how close can the hand camera measure distance accurately?",
    ),
    f(
        "sim",
        "Simulation runs in Gazebo Harmonic; the world file is sim/worlds/lab_b2.sdf",
        tags=("sim",),
        identifier="sim/worlds/lab_b2.sdf",
    ),
    f(
        "booking",
        "Lab B2 robot time is booked in the shared calendar 'B2 Robot'; max 3 hours per person per day",
        tags=("lab",),
        paraphrase="how long may one person use the machine per day and where do I reserve it?",
    ),
    f(
        "students",
        "Jonas Berg (PhD student) works on grasp planning; Amira Haddad on the navigation stack",
        tags=("people",),
        who="who in the lab works on grasp planning?",
    ),
    f(
        "payload",
        "Arm payload is 5 kg at full reach; we keep experiments under 3.5 kg",
        "decision",
        tags=("arm",),
        paraphrase="how heavy may the objects be that it picks up in tests?",
    ),
    f(
        "fault-code",
        "Drive fault E-217 (overcurrent, left wheel) appeared twice on ramps; motor driver firmware update requested",
        "blocker",
        tags=("base",),
        identifier="E-217",
    ),
    f(
        "map",
        "Current lab map is maps/b2_2026_02.yaml; regenerate with slam_toolbox after moving furniture",
        tags=("nav",),
        identifier="maps/b2_2026_02.yaml",
    ),
    f(
        "teleop",
        "Teleop: Xbox controller via joy_node; hold LB as the dead-man switch",
        tags=("ros",),
        paraphrase="which button must be held to drive it by hand?",
    ),
    f(
        "calibration",
        "Hand-eye calibration uses the ChArUco board (5x7, 30 mm squares) on the bench",
        tags=("arm",),
        paraphrase="what pattern do we use to align the camera with the arm?",
        who="which agent recorded the camera-to-arm alignment setup?",
        agent=CX,
    ),
    f(
        "speed-zone",
        "Speed drops to 0.3 m/s within 1.5 m of a person (safety scanner zone 2)",
        "decision",
        tags=("safety",),
        paraphrase="how fast may it move near people?",
    ),
    f(
        "battery",
        "Base battery is a 48 V 40 Ah LiFePO4 pack, about 5 h of navigation per charge",
        tags=("power",),
        paraphrase="how long does a full charge last when driving around?",
    ),
)

CHAINS = (
    chain(
        "gripper-force",
        "what is the gripper force limit?",
        v("Gripper force limit is 60 N", agent=RB),
        v("Gripper force limit lowered to 35 N after the glass beaker incident", "supersede", agent=CX),
        tags=("gripper",),
    ),
    chain(
        "lidar-fw",
        "which firmware version is the front lidar on?",
        v("Front lidar firmware 2.3.1", agent=RB),
        v("Front lidar updated to firmware 2.4.0 (fixes the ghost points near glass)", "unmarked", agent=RB),
        tags=("sensors",),
    ),
    chain(
        "arm-calib",
        "when was the arm last calibrated?",
        v("Arm kinematic calibration done on 8 January, residual 0.6 mm", agent=RB),
        v("Arm recalibrated on 19 February after the joint 4 repair, residual 0.4 mm", "unmarked", agent=RB),
        v("Arm recalibrated 11 March (routine), residual 0.5 mm", "unmarked", agent=RB),
        tags=("arm",),
    ),
    chain(
        "max-speed",
        "what is the base speed cap in the lab?",
        v("Base speed capped at 0.8 m/s in the lab", agent=RB),
        v("Lab speed cap reduced to 0.6 m/s while visitors are around this month", "supersede", agent=CC),
        tags=("safety",),
    ),
    chain(
        "planner",
        "which motion planner does the arm use?",
        v("Arm motion planning uses OMPL RRTConnect through MoveIt 2", agent=CX),
        v(
            "Switched the arm planner to Pilz industrial for linear moves; OMPL only for free-space",
            "supersede",
            agent=RB,
        ),
        tags=("arm",),
    ),
    chain(
        "battery-cycles",
        "how many charge cycles does the base battery have?",
        v("Base battery at 212 charge cycles", agent=RB),
        v("Base battery at 251 cycles; capacity test shows 94%", "unmarked", agent=RB),
        tags=("power",),
    ),
    chain(
        "controller-rate",
        "what rate does the arm controller run at?",
        v("Arm joint trajectory controller runs at 250 Hz", agent=CX),
        v("Controller rate raised to 500 Hz after moving to the real-time kernel", "supersede", agent=RB),
        tags=("arm",),
    ),
    chain(
        "safety-officer",
        "who is the lab's safety officer?",
        v("Lab safety officer is Dr. Elena Petrova", agent=RB),
        v("Safety officer for lab B2 is now Dr. Kwame Asante (Elena on sabbatical)", "unmarked", agent=CX),
        tags=("safety",),
    ),
)

HOPS = (
    hop(
        "which topic carries the scans of the sensor that got the ghost-point firmware fix?",
        "lidar-topic",
        "lidar-ghost",
    ),
    hop("which student works on the component that calls the free-space planner?", "grasp-planner", "students"),
    hop("what map does the stack that Amira works on load?", "students", "map"),
    hop("where is the world file of the simulator we run the lab's digital twin in?", "twin", "sim"),
    hop("which motor driver model threw the overcurrent fault on the ramps?", "fault-code", "driver"),
    hop("how many hours of driving does the pack that the robot charges at the east wall give?", "charging", "battery"),
)

EXTRA = (
    f(
        "lidar-ghost",
        "Ghost points near glass doors came from the front lidar; firmware fix tracked by the vendor",
        tags=("sensors",),
    ),
    f("grasp-planner", "Grasp planning calls the free-space planner (OMPL) for the approach moves", tags=("arm",)),
    f("twin", "The lab's digital twin runs in Gazebo with the same URDF as the real robot", tags=("sim",)),
    f("driver", "Left wheel motor driver is a Roboteq SBL2360 on CAN id 3", tags=("base",)),
)

NOTES = (
    *notes(
        "finding",
        "Odometry drifts about 2% on the new floor coating; wheel radius recalibrated",
        "The Orin throttles above 75 °C in the enclosure; the fan curve was made more aggressive",
        "Depth images have holes on black plastic parts; use the IR projector at high power",
        "The robot hesitates at the B2 door because of the reflective threshold strip",
    ),
    *notes(
        "action-item",
        "Order spare silicone pads for the gripper",
        "Update the risk assessment for the visitors' day",
        "Re-tape the lab floor markings near the docking station",
    ),
    *notes(
        "fact",
        "Lab B2 is on the second floor, access with the blue badge",
        "The robot's hostname is mm-02 on the lab network",
        "The arm is a 6-DoF collaborative arm with a two-finger gripper",
    ),
)

NAVIGATION = (
    "navigate to the docking station",
    "follow the corridor",
    "fetch the stapler from desk 3",
    "drive to room B2.14 and back",
)
MANIPULATION = (
    "pick the red cube",
    "open the drawer",
    "hand over the mug",
    "place the box on the shelf",
    "press the elevator button",
    "wipe the table",
    "sort screws into the tray",
    "open the lab door",
    "pour water into the cup",
    "pick the glossy box",
    "stack three blocks",
)
FAILURES = {
    NAVIGATION: ("localization lost near the door", "stopped by the safety scanner", "path blocked by a chair"),
    MANIPULATION: ("grasp missed", "object slipped", "planning timed out", "collision check rejected every plan"),
}


def fill(rng: Random) -> list[Fact]:
    """Experiment log lines: a task, trials and the outcome (failures that fit the kind of task)."""
    out: list[Fact] = []
    for tasks, failures in FAILURES.items():
        for task in tasks:
            for _ in range(2 if tasks is MANIPULATION else 3):
                n = rng.choice((5, 10, 20))
                ok = rng.randint(n // 2, n)
                if ok == n:
                    outcome = rng.choice(("succeeded {n}/{n}", "{n}/{n}, no interventions")).format(n=n)
                else:
                    outcome = f"{ok}/{n} succeeded; failures: {rng.choice(failures)}"
                run = rng.randint(100, 480)
                out.append(Fact(f"run-{run}-{len(out)}", f"Run {run}: {task} — {outcome}", "history", ("runs",)))
    return out


MORE_NOTES = (
    *notes(
        "finding",
        "The safety scanner triggers on the lab's coat rack; it was moved 40 cm",
        "Wheel encoders miss ticks above 1.1 m/s; irrelevant with the lab cap",
        "The Orin's NVMe fills with bags in about two weeks of daily runs",
        "Grasp success drops in the afternoon sun from the west windows; blinds help",
        "MoveIt's collision check is the bottleneck in cluttered scenes (60% of planning time)",
        "Localization jumps when the lab's sliding door is open",
    ),
    *notes(
        "decision",
        "Every experiment run is recorded as a rosbag and named after the run number",
        "No autonomous runs without someone holding the pendant",
        "Code on the robot is deployed only from tagged commits of the lab repo",
    ),
    *notes(
        "action-item",
        "Replace the worn caster wheel on the rear left",
        "Label the spare batteries with their cycle counts",
        "Write up the drawer-opening results for the group meeting",
        "Calibrate the wrist camera's intrinsics again after the lens cleaning",
    ),
    *notes(
        "fact",
        "The group meeting is on Tuesdays at 10:00 in room B2.14",
        "The robot weighs 72 kg with the arm mounted",
        "The lab's GPU server for training is gpu-lab-1, 4x RTX 4090",
    ),
)

DOMAIN = Domain("robot", (RB, CX, CC), FACTS + EXTRA, CHAINS, HOPS, NOTES + MORE_NOTES, fill)
