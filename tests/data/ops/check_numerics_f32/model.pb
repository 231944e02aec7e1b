
2
xPlaceholder*
dtype0*
shape
:
5
yCheckNumericsx*
T0*
message
x is bad"Ú