
1
condPlaceholder*
dtype0
*
shape:
?
xPlaceholder*
dtype0* 
shape:ÿÿÿÿÿÿÿÿÿ
2
yPlaceholder*
dtype0*
shape
:
"
zSelectV2condxy*
T0"Ú