
3
x0Placeholder*
dtype0*
shape
:
3
x1Placeholder*
dtype0*
shape
:
3
x2Placeholder*
dtype0*
shape
:
3
yPackx0x1x2*
N*
T0*

axis"Ú