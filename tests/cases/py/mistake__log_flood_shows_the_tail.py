# A program that prints until the log limit ends it gets the last lines (each cut short) and the
# count of what came before, not the flood: the model sees where it was and what to change.
# expect-error: LogLimit
# expect-message: Log less: print summaries, not whole results.
# expect-message: --- console: the last 20 lines; the
# expect-no-message: line 00000 
for i in range(100000):
    print("line " + str(i).zfill(5) + " " + "x" * 90)
"never"
