
@
logitsPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ
@
labelsPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ
>
xentSoftmaxCrossEntropyWithLogitslogitslabels*
T0"Ú