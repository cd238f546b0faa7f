"""What every part of the hub leans on and none owns: the refusal every store raises, the end
of background tasks, logging, the garbage collector's pace, tools made from data, and the
guard on which hosts the hub may reach."""
