
?
xPlaceholder*
dtype0* 
shape:ÿÿÿÿÿÿÿÿÿ
;
yPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ

zAddV2xy*
T0"Ú