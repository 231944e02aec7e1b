
2
xPlaceholder*
dtype0*
shape
:
7
yUnpackx*
T0*
axisÿÿÿÿÿÿÿÿÿ*	
num"Ú