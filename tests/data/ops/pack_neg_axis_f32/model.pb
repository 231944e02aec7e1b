
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
8
yPackx0x1*
N*
T0*
axisÿÿÿÿÿÿÿÿÿ"Ú