# subprocess, socket, ctypes, importlib, shutil and urllib: none can be imported.
# expect: {"subprocess":"ModuleNotFoundError","socket":"ModuleNotFoundError","ctypes":"ModuleNotFoundError","importlib":"ModuleNotFoundError","shutil":"ModuleNotFoundError","urllib":"ModuleNotFoundError"}
outcome = {}
for name in ["subprocess", "socket", "ctypes", "importlib", "shutil", "urllib"]:
    try:
        if name == "subprocess":
            import subprocess
        elif name == "socket":
            import socket
        elif name == "ctypes":
            import ctypes
        elif name == "importlib":
            import importlib
        elif name == "shutil":
            import shutil
        else:
            import urllib
        outcome[name] = "imported"
    except ModuleNotFoundError:
        outcome[name] = "ModuleNotFoundError"
outcome
