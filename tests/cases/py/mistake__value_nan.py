# An average of nothing computed with float('nan'): refused, naming the field and what to send.
# expect-error: Unserializable
# expect-message: the result["average"] is the float nan, which cannot be sent as JSON; JSON has no NaN or infinity
temperatures = []
average = sum(temperatures) / len(temperatures) if temperatures else float("nan")
{"average": average}
