# Standard modules that exist: json, re, math, datetime, collections, itertools, functools, base64,
# typing, dataclasses, asyncio (gather, run), sys, unicodedata, binascii.
# expect: {"json":"{\"a\": [1, 2]}","parsed":{"b":1},"re":["1","22"],"sqrt":4.0,"date":"2024-02-01","delta":86400.0,"counter":[["a",2]],"default":{"k":[1]},"deque":[0,1,2],"named":3,"chain":[1,2],"reduce":6,"base64":"aGk=","hex":"6869"}
import base64
import binascii
import functools
import itertools
import json
import math
import re
import sys
import unicodedata
from collections import Counter, defaultdict, deque, namedtuple
from datetime import date, datetime, timedelta
from typing import Any, Optional

grouped: Any = defaultdict(list)
grouped["k"].append(1)
queue = deque([1, 2])
queue.appendleft(0)
maybe: Optional[int] = None
Pair = namedtuple("Pair", ["left", "right"])
{
    "json": json.dumps({"a": [1, 2]}),
    "parsed": json.loads('{"b": 1}'),
    "re": re.findall(r"\d+", "a1b22"),
    "sqrt": math.sqrt(16),
    "date": (date(2024, 1, 31) + timedelta(days=1)).isoformat(),
    "delta": (datetime(2024, 1, 2) - datetime(2024, 1, 1)).total_seconds(),
    "counter": Counter("aab").most_common(1),
    "default": dict(grouped),
    "deque": list(queue),
    "named": Pair(1, 2).left + Pair(1, 2).right,
    "chain": list(itertools.chain([1], [2])),
    "reduce": functools.reduce(lambda a, b: a + b, [1, 2, 3]),
    "base64": base64.b64encode(b"hi").decode(),
    "hex": binascii.hexlify(b"hi").decode(),
}
