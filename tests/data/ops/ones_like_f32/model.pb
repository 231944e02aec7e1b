
;
xPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ

yOnesLikex*
T0"Ú