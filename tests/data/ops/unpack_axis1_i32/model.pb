
6
xPlaceholder*
dtype0*
shape:
.
yUnpackx*
T0*

axis*	
num"Ú