# A dict that contains itself, one level down.
# expect-error: Unserializable
# expect-message: contains itself
outer = {"inner": {}}
outer["inner"]["back"] = outer
outer
