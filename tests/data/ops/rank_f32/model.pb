
,
xPlaceholder*
dtype0*
shape:

yRankx*
T0"Ú