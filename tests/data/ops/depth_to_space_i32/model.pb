
:
xPlaceholder*
dtype0*
shape:	
F
yDepthToSpacex*
T0*

block_size*
data_formatNHWC"ª