#!/usr/bin/python3
"""Private D-Bus buses with python-dbusmock's NetworkManager, UPower and notification daemon.

    busmock.py start --dir DIR [--system] [--session] [--no-nm] [--no-upower] [--no-notifications]
                     [--metered VALUE] [--battery on|off] [--detached]
    busmock.py metered --dir DIR yes|no|guess-yes|guess-no|unknown
    busmock.py battery --dir DIR on|off
    busmock.py notifications --dir DIR [--clear]
    busmock.py remove --dir DIR nm|upower|notifications
    busmock.py add --dir DIR nm|upower|notifications [--metered VALUE] [--battery on|off]
    busmock.py stop --dir DIR

`start` runs a private dbus-daemon per requested bus (`--system`, the default, and/or `--session`),
each from a config file it writes into DIR and listening on a socket in DIR, and on them one
`python3 -m dbusmock` per template: `networkmanager` and `upower` on the system bus,
`notification_daemon` on the session bus. Then it writes DIR/bus.env (atomically, so its existence
means ready):

    DBUS_SYSTEM_BUS_ADDRESS=unix:path=DIR/system.sock,guid=...
    DBUS_SESSION_BUS_ADDRESS=unix:path=DIR/session.sock,guid=...

prints `busmock ready pid=PID system=ADDRESS session=ADDRESS`, and runs until SIGTERM/SIGINT/SIGHUP
or `stop`. It never touches the machine's real buses: every child gets only the private addresses.
Every child is in start's process group (start makes itself a group leader) and dies with it
(PR_SET_PDEATHSIG); a SIGTERM stops the mocks and the buses, removes bus.env and exits 0. start
also ends when the process that started it goes away (unless --detached: a test that crashes leaves
nothing behind), or when a bus daemon dies (exit 1).
Logs: DIR/system-bus.log, DIR/session-bus.log, DIR/nm.log, DIR/upower.log, DIR/notifications.log
(dbusmock's log of every call and emitted signal).

The properties, as the real services have them:
  NetworkManager  /org/freedesktop/NetworkManager  org.freedesktop.NetworkManager.Metered (u, NMMetered:
                  0 unknown, 1 yes, 2 no, 3 guess-yes, 4 guess-no). The template has no Metered
                  property, so start adds it (default `no`) with the mock's AddProperty.
  UPower          /org/freedesktop/UPower          org.freedesktop.UPower.OnBattery (b; default off)
`metered` sets Metered through the NetworkManager template's own Mock.SetProperty, which emits
org.freedesktop.DBus.Properties.PropertiesChanged("org.freedesktop.NetworkManager", {"Metered": u}, [])
and also NetworkManager's old org.freedesktop.NetworkManager.PropertiesChanged({"Metered": u}).
`battery` sets OnBattery through the mock's UpdateProperties (the upower template has no setter),
which emits org.freedesktop.DBus.Properties.PropertiesChanged("org.freedesktop.UPower",
{"OnBattery": b}, []). Both emit even when the value does not change, and print the value read back.

`notifications` prints one JSON object a line for every Notify call the notification daemon mock
got (its call log), oldest first: {"time", "app_name", "replaces_id", "app_icon", "summary", "body",
"actions", "hints", "expire_timeout"}; `--clear` empties the log after printing.

`remove` stops one mock: its name leaves the bus (NameOwnerChanged), as when the service is not
running; calls to it then fail with org.freedesktop.DBus.Error.ServiceUnknown (the bus has no
activatable services). `add` starts it again, fresh. Both talk to start over DIR/control.sock.

Debian 12: apt-get install python3-dbusmock (brings python3-dbus, python3-gi; dbus-daemon is in
`dbus-daemon`). Debian's dbus-python is only in /usr/bin/python3: under another python3 the script
runs itself again with /usr/bin/python3.
"""

import argparse
import ctypes
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

try:
    import dbus
    import dbusmock  # noqa: F401 (the mocks run as `python3 -m dbusmock`: fail here, not in a child)
except ImportError:
    # Debian's dbus-python lives in /usr/bin/python3 only; another python3 may come first on PATH.
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit("busmock.py needs dbus-python and python-dbusmock: apt-get install python3-dbusmock")

MOCK_IFACE = "org.freedesktop.DBus.Mock"
PROPERTIES_IFACE = "org.freedesktop.DBus.Properties"
NM_NAME = "org.freedesktop.NetworkManager"
NM_PATH = "/org/freedesktop/NetworkManager"
NM_MAIN_PATH = "/org/freedesktop"  # the networkmanager template's main mock object
UPOWER_NAME = "org.freedesktop.UPower"
UPOWER_PATH = "/org/freedesktop/UPower"
NOTIFY_NAME = "org.freedesktop.Notifications"
NOTIFY_PATH = "/org/freedesktop/Notifications"

METERED = {"unknown": 0, "yes": 1, "no": 2, "guess-yes": 3, "guess-no": 4}
METERED_NAMES = {value: name for name, value in METERED.items()}

# mock name -> (bus, dbusmock template, bus name)
MOCKS = {
    "nm": ("system", "networkmanager", NM_NAME),
    "upower": ("system", "upower", UPOWER_NAME),
    "notifications": ("session", "notification_daemon", NOTIFY_NAME),
}
ENV_KEYS = {"system": "DBUS_SYSTEM_BUS_ADDRESS", "session": "DBUS_SESSION_BUS_ADDRESS"}
REAL_BUS_SOCKETS = ("/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket")

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<!-- Written by contrib/test/busmock.py: a private {kind} bus for tests, no activation. -->
<busconfig>
  <type>{kind}</type>
  <listen>{listen}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <!-- Any local user may connect (the daemon under test may run as another user), own any
         name, call anything, and monitor (busctl monitor, dbus-monitor). -->
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
"""


class BusMockError(Exception):
    pass


def log(message):
    print(f"busmock: {message}", file=sys.stderr, flush=True)


def set_parent_death_signal():
    """preexec_fn: the child gets SIGTERM when start dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def child_environment(addresses):
    """The environment for a child: ours, minus every bus address but the private ones."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("DBUS_SYSTEM_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS", "DBUS_STARTER_ADDRESS",
                          "DBUS_STARTER_BUS_TYPE")}
    for kind, address in addresses.items():
        env[ENV_KEYS[kind]] = address
    if "DBUS_SESSION_BUS_ADDRESS" not in env:
        # Never autolaunch a session bus (dbus-launch via X11) nor find the user's real one.
        env["DBUS_SESSION_BUS_ADDRESS"] = "disabled:"
    return env


def check_private(address):
    for path in REAL_BUS_SOCKETS:
        if path in address:
            raise BusMockError(f"refusing the real system bus ({address})")


def to_json(value):
    """dbus-python values to plain JSON ones (dbus.Boolean is an int, so it comes first)."""
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.ByteArray, bytes)):
        return list(bytes(value))
    if isinstance(value, dict):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return repr(value)


def read_env(directory):
    path = os.path.join(directory, "bus.env")
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        raise BusMockError(f"{path} is missing: is `busmock.py start --dir {directory}` running?") from None
    values = {}
    for line in lines:
        key, _, value = line.partition("=")
        if key:
            values[key] = value
    return values


def connect(directory, kind):
    """A connection to the private bus of `kind` that start wrote into DIR/bus.env; never a real bus."""
    address = read_env(directory).get(ENV_KEYS[kind])
    if not address:
        raise BusMockError(f"no {kind} bus in {directory}/bus.env (start it with --{kind})")
    check_private(address)
    return dbus.bus.BusConnection(address)


# ---------------------------------------------------------------------------------------------
# start: the supervisor


class Supervisor:
    def __init__(self, args):
        self.dir = os.path.abspath(args.dir)
        self.kinds = [kind for kind in ("system", "session") if getattr(args, kind)] or ["system"]
        self.wanted = [name for name in MOCKS if MOCKS[name][0] in self.kinds and not getattr(args, f"no_{name}")]
        self.metered = args.metered
        self.battery = args.battery == "on"
        self.daemons = {}  # kind -> Popen
        self.addresses = {}  # kind -> address
        self.connections = {}  # kind -> dbus.bus.BusConnection
        self.mocks = {}  # name -> Popen
        self.removing = set()
        self.listener = None
        self.stopping = False
        self.parent = os.getppid()
        self.detached = args.detached
        self.wake_read, self.wake_write = os.pipe()

    # -- children

    def spawn(self, argv, log_name, pass_fds=()):
        log_path = os.path.join(self.dir, log_name)
        with open(log_path, "ab") as log_file:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                                    env=child_environment(self.addresses), pass_fds=pass_fds,
                                    preexec_fn=set_parent_death_signal, close_fds=True, cwd=self.dir)

    def listen_address(self, kind):
        path = os.path.join(self.dir, f"{kind}.sock")
        if len(path.encode()) < 100:
            return f"unix:path={path}"
        # sockaddr_un holds 108 bytes: a long DIR gets an abstract socket (same network namespace only).
        return f"unix:abstract=uploadd-busmock-{kind}-{os.getpid()}-{time.monotonic_ns()}"

    def start_bus(self, kind):
        config = os.path.join(self.dir, f"{kind}-bus.conf")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(BUS_CONFIG.format(kind=kind, listen=self.listen_address(kind)))
        read_fd, write_fd = os.pipe()
        try:
            process = self.spawn(["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile",
                                  "--nosyslog", f"--print-address={write_fd}"], f"{kind}-bus.log", pass_fds=(write_fd,))
        finally:
            os.close(write_fd)
        self.daemons[kind] = process
        address = b""
        deadline = time.monotonic() + 10
        with selectors.DefaultSelector() as selector:
            selector.register(read_fd, selectors.EVENT_READ)
            while not address.endswith(b"\n") and time.monotonic() < deadline:
                if selector.select(timeout=0.2):
                    chunk = os.read(read_fd, 4096)
                    if not chunk:
                        break
                    address += chunk
        os.close(read_fd)
        address = address.decode().strip()
        if not address:
            raise BusMockError(f"dbus-daemon for the {kind} bus printed no address; see {self.dir}/{kind}-bus.log")
        check_private(address)
        self.addresses[kind] = address
        self.connections[kind] = dbus.bus.BusConnection(address)
        log(f"{kind} bus at {address}")

    def start_mock(self, name, metered=None, battery=None):
        kind, template, bus_name = MOCKS[name]
        if kind not in self.connections:
            raise BusMockError(f"{name} needs the {kind} bus, which this busmock does not run")
        if self.mocks.get(name) is not None:
            raise BusMockError(f"{name} is already on the bus")
        bus = self.connections[kind]
        if bus.name_has_owner(bus_name):
            raise BusMockError(f"{bus_name} already has an owner on the {kind} bus")
        parameters = {}
        if name == "upower":
            parameters["OnBattery"] = self.battery if battery is None else battery
        argv = [sys.executable, "-m", "dbusmock", f"--{kind}", "--template", template,
                "--logfile", os.path.join(self.dir, f"{name}.log"), "--parameters", json.dumps(parameters)]
        process = self.spawn(argv, f"{name}.out")
        self.mocks[name] = process
        deadline = time.monotonic() + 20
        while not bus.name_has_owner(bus_name):
            if process.poll() is not None:
                raise BusMockError(f"dbusmock {template} exited ({process.returncode}); see {self.dir}/{name}.out")
            if time.monotonic() > deadline:
                raise BusMockError(f"dbusmock {template} did not take {bus_name}; see {self.dir}/{name}.out")
            time.sleep(0.05)
        if name == "nm":
            # Calls wait in the queue until the mock's main loop runs, which is after the template loaded.
            value = dbus.UInt32(METERED[self.metered if metered is None else metered])
            manager = bus.get_object(NM_NAME, NM_PATH, introspect=False)
            try:
                manager.AddProperty(NM_NAME, "Metered", value, dbus_interface=MOCK_IFACE, timeout=20)
            except dbus.exceptions.DBusException as error:
                if not error.get_dbus_name().endswith(".PropertyExists"):
                    raise
                # A newer template that has Metered itself.
                manager.UpdateProperties(NM_NAME, {"Metered": value}, dbus_interface=MOCK_IFACE, timeout=20)
        else:
            # Wait until the template is loaded and the main loop answers.
            path = {"upower": UPOWER_PATH, "notifications": NOTIFY_PATH}[name]
            bus.get_object(bus_name, path, introspect=False).GetCalls(dbus_interface=MOCK_IFACE, timeout=20)
        log(f"{name}: dbusmock {template} on the {kind} bus (pid {process.pid})")

    def stop_mock(self, name):
        process = self.mocks.get(name)
        if process is None:
            raise BusMockError(f"{name} is not on the bus")
        kind, _, bus_name = MOCKS[name]
        self.removing.add(name)
        try:
            terminate([process])
        finally:
            self.removing.discard(name)
            self.mocks[name] = None
        bus = self.connections[kind]
        deadline = time.monotonic() + 5
        while bus.name_has_owner(bus_name) and time.monotonic() < deadline:
            time.sleep(0.05)
        log(f"{name}: removed from the {kind} bus")

    # -- control socket

    def handle(self, connection):
        connection.settimeout(5)
        data = b""
        while not data.endswith(b"\n"):
            chunk = connection.recv(4096)
            if not chunk:
                break
            data += chunk
        try:
            request = json.loads(data or b"{}")
            command, name = request.get("command"), request.get("mock")
            if name not in MOCKS:
                raise BusMockError(f"unknown mock {name!r} (nm, upower, notifications)")
            if command == "remove":
                self.stop_mock(name)
            elif command == "add":
                battery = request.get("battery")
                self.start_mock(name, metered=request.get("metered"),
                                battery=None if battery is None else battery == "on")
            else:
                raise BusMockError(f"unknown command {command!r}")
            answer = {"ok": True}
        except (BusMockError, dbus.exceptions.DBusException, ValueError) as error:
            answer = {"ok": False, "error": str(error)}
        connection.sendall(json.dumps(answer).encode() + b"\n")

    # -- main

    def on_signal(self, signum, _frame):
        self.stopping = True
        try:
            os.write(self.wake_write, b"x")
        except OSError:
            pass

    def reap(self):
        """False when a bus daemon died (then everything stops)."""
        for kind, process in self.daemons.items():
            if process.poll() is not None:
                log(f"the {kind} bus daemon exited ({process.returncode}); see {self.dir}/{kind}-bus.log")
                return False
        for name, process in self.mocks.items():
            if process is not None and name not in self.removing and process.poll() is not None:
                log(f"{name}: dbusmock exited by itself ({process.returncode}); see {self.dir}/{name}.out")
                self.mocks[name] = None
        return True

    def run(self):
        os.makedirs(self.dir, exist_ok=True)
        pid_path = os.path.join(self.dir, "busmock.pid")
        old = read_pid(self.dir)
        if old and alive(old):
            raise BusMockError(f"busmock {old} already runs in {self.dir}")
        for stale in ("bus.env", "control.sock", "system.sock", "session.sock"):
            try:
                os.unlink(os.path.join(self.dir, stale))
            except FileNotFoundError:
                pass
        try:
            os.setpgid(0, 0)
        except PermissionError:
            pass  # a session leader already leads its group
        # Whoever started us may have left these blocked (Swift test threads do).
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD})
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self.on_signal)
        with open(pid_path, "w", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()}\n")
        status = 0
        try:
            for kind in self.kinds:
                self.start_bus(kind)
            for name in self.wanted:
                self.start_mock(name)
            os.chdir(self.dir)  # bind by a relative name: sockaddr_un is short
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind("control.sock")
            self.listener.listen(4)
            lines = [f"{ENV_KEYS[kind]}={self.addresses[kind]}" for kind in self.kinds]
            temporary = os.path.join(self.dir, "bus.env.tmp")
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
            os.replace(temporary, os.path.join(self.dir, "bus.env"))
            print(f"busmock ready pid={os.getpid()} "
                  + " ".join(f"{kind}={self.addresses[kind]}" for kind in self.kinds), flush=True)
            with selectors.DefaultSelector() as selector:
                selector.register(self.listener, selectors.EVENT_READ)
                selector.register(self.wake_read, selectors.EVENT_READ)
                while not self.stopping:
                    for key, _ in selector.select(timeout=0.5):
                        if key.fileobj is self.listener:
                            connection, _ = self.listener.accept()
                            with connection:
                                try:
                                    self.handle(connection)
                                except OSError as error:
                                    log(f"control connection: {error}")
                        else:
                            os.read(self.wake_read, 64)
                    if not self.reap():
                        status = 1
                        break
                    if not self.detached and os.getppid() != self.parent:
                        log("the process that started busmock is gone; stopping")
                        break
        except BusMockError as error:
            log(str(error))
            status = 1
        finally:
            self.shutdown()
        return status

    def shutdown(self):
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        if self.listener is not None:
            self.listener.close()
        for name in ("bus.env", "control.sock"):
            try:
                os.unlink(os.path.join(self.dir, name))
            except FileNotFoundError:
                pass
        for connection in self.connections.values():
            connection.close()
        # The mocks first: they quit on their own when their bus goes, but log noise is avoided.
        terminate([process for process in self.mocks.values() if process is not None])
        terminate(list(self.daemons.values()))
        for kind in self.daemons:
            try:
                os.unlink(os.path.join(self.dir, f"{kind}.sock"))
            except FileNotFoundError:
                pass
        try:
            os.unlink(os.path.join(self.dir, "busmock.pid"))
        except FileNotFoundError:
            pass
        log("stopped")


def terminate(processes, grace=3.0):
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + grace
    for process in processes:
        try:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def read_pid(directory):
    try:
        with open(os.path.join(directory, "busmock.pid"), encoding="utf-8") as handle:
            return int(handle.read().strip())
    except (FileNotFoundError, ValueError):
        return None


def alive(pid):
    """Running and a busmock (not a zombie, not a reused pid)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z" and b"busmock.py" in command


# ---------------------------------------------------------------------------------------------
# the other subcommands


def cmd_start(args):
    return Supervisor(args).run()


def cmd_metered(args):
    bus = connect(args.dir, "system")
    value = dbus.UInt32(METERED[args.value])
    main = bus.get_object(NM_NAME, NM_MAIN_PATH, introspect=False)
    manager = bus.get_object(NM_NAME, NM_PATH, introspect=False)
    try:
        # The template's setter: Properties.Set (standard PropertiesChanged) + NM's own PropertiesChanged.
        main.SetProperty(NM_PATH, NM_NAME, "Metered", value, dbus_interface=MOCK_IFACE, timeout=10)
    except dbus.exceptions.DBusException as error:
        if error.get_dbus_name() != "org.freedesktop.DBus.Error.UnknownMethod":
            raise
        manager.UpdateProperties(NM_NAME, {"Metered": value}, dbus_interface=MOCK_IFACE, timeout=10)
    now = manager.Get(NM_NAME, "Metered", dbus_interface=PROPERTIES_IFACE, timeout=10)
    print(f"Metered={int(now)} ({METERED_NAMES.get(int(now), '?')})")
    return 0 if int(now) == int(value) else 1


def cmd_battery(args):
    bus = connect(args.dir, "system")
    upower = bus.get_object(UPOWER_NAME, UPOWER_PATH, introspect=False)
    value = dbus.Boolean(args.value == "on")
    upower.UpdateProperties(UPOWER_NAME, {"OnBattery": value}, dbus_interface=MOCK_IFACE, timeout=10)
    now = upower.Get(UPOWER_NAME, "OnBattery", dbus_interface=PROPERTIES_IFACE, timeout=10)
    print(f"OnBattery={'true' if now else 'false'}")
    return 0 if bool(now) == bool(value) else 1


def cmd_notifications(args):
    bus = connect(args.dir, "session")
    daemon = bus.get_object(NOTIFY_NAME, NOTIFY_PATH, introspect=False)
    calls = daemon.GetMethodCalls("Notify", dbus_interface=MOCK_IFACE, timeout=10)
    fields = ("app_name", "replaces_id", "app_icon", "summary", "body", "actions", "hints", "expire_timeout")
    for timestamp, arguments in calls:
        record = {"time": int(timestamp)}
        record.update(zip(fields, (to_json(argument) for argument in arguments)))
        print(json.dumps(record, ensure_ascii=False), flush=True)
    if args.clear:
        daemon.ClearCalls(dbus_interface=MOCK_IFACE, timeout=10)
    return 0


def control(directory, request):
    directory = os.path.abspath(directory)
    if not os.path.exists(os.path.join(directory, "control.sock")):
        raise BusMockError(f"no busmock runs in {directory}")
    os.chdir(directory)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(60)
        connection.connect("control.sock")
        connection.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = connection.recv(4096)
            if not chunk:
                break
            data += chunk
    answer = json.loads(data or b'{"ok": false, "error": "no answer"}')
    if not answer.get("ok"):
        raise BusMockError(answer.get("error", "failed"))


def cmd_remove(args):
    control(args.dir, {"command": "remove", "mock": args.mock})
    print(f"{args.mock} removed")
    return 0


def cmd_add(args):
    control(args.dir, {"command": "add", "mock": args.mock, "metered": args.metered, "battery": args.battery})
    print(f"{args.mock} added")
    return 0


def cmd_stop(args):
    directory = os.path.abspath(args.dir)
    pid = read_pid(directory)
    if not pid or not alive(pid):
        print("not running")
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        log(f"{pid} ignored SIGTERM; killing its process group")
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    print("stopped")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, function, help_text):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--dir", required=True, help="the busmock's directory")
        sub.set_defaults(function=function)
        return sub

    start = command("start", cmd_start, "start the buses and mocks; runs until stopped")
    start.add_argument("--system", action="store_true", help="a system bus with networkmanager and upower (default)")
    start.add_argument("--session", action="store_true", help="a session bus with notification_daemon")
    start.add_argument("--no-nm", action="store_true", help="no NetworkManager on the system bus")
    start.add_argument("--no-upower", action="store_true", help="no UPower on the system bus")
    start.add_argument("--no-notifications", action="store_true", help="no notification daemon on the session bus")
    start.add_argument("--detached", action="store_true", help="keep running when the starting process is gone")
    start.add_argument("--metered", choices=METERED, default="no", help="NetworkManager's Metered at start (no)")
    start.add_argument("--battery", choices=("on", "off"), default="off", help="UPower's OnBattery at start (off)")

    metered = command("metered", cmd_metered, "set NetworkManager's Metered")
    metered.add_argument("value", choices=METERED)
    battery = command("battery", cmd_battery, "set UPower's OnBattery")
    battery.add_argument("value", choices=("on", "off"))
    notifications = command("notifications", cmd_notifications, "print the notifications received, as JSON lines")
    notifications.add_argument("--clear", action="store_true", help="forget them afterwards")
    remove = command("remove", cmd_remove, "take a mock off its bus")
    remove.add_argument("mock", choices=MOCKS)
    add = command("add", cmd_add, "put a mock (back) on its bus")
    add.add_argument("mock", choices=MOCKS)
    add.add_argument("--metered", choices=METERED, help="NetworkManager's Metered (default: start's)")
    add.add_argument("--battery", choices=("on", "off"), help="UPower's OnBattery (default: start's)")
    command("stop", cmd_stop, "stop the busmock running in DIR")

    args = parser.parse_args()
    try:
        return args.function(args)
    except BusMockError as error:
        log(str(error))
        return 1
    except dbus.exceptions.DBusException as error:
        log(f"{error.get_dbus_name()}: {error.get_dbus_message()}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
