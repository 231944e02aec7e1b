
/
s0Placeholder*
dtype0	*
shape:
/
s1Placeholder*
dtype0	*
shape:
#
yBroadcastArgss0s1*
T0	"Ú