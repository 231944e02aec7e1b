
2
xPlaceholder*
dtype0*
shape
:

yAcosx*
T0"ª