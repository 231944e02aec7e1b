"""Tiny keras-hub Backbone configs for bench/models/zoo.py (random weights, nothing downloaded).

HUB_CONFIGS[family] is either a kwargs dict for keras_hub.models.<family>Backbone
or a zero-argument function returning the built backbone.
HUB_INPUT_SHAPES[family][input_name] gives fixed batch-1 shapes where the
default (None -> 8) would not work or a specific size is required.
Verified with keras-hub 0.32.0 / keras 3.15.1 / TF 2.21 (tensorflow backend).

All other inputs: batch 1, None dims -> 8 (token ids int32 in [1, 64), masks
ones, images float32); every image backbone here has a fixed image_shape baked
into model.inputs, so unnamed image inputs ("keras_tensor*") need no entry.
HUB_INPUT_VALUES (optional, end of file) lists the few inputs whose values
matter.
"""

HUB_CONFIGS = {}
HUB_INPUT_SHAPES = {}

# ---------------------------------------------------------------- text encoders
HUB_CONFIGS["Electra"] = dict(
    vocab_size=64, num_layers=2, num_heads=2, hidden_dim=32, embedding_dim=32,
    intermediate_dim=64, max_sequence_length=64,
    num_segments=64,  # so any id in [0,64) is a valid segment id
)
HUB_CONFIGS["RoformerV2"] = dict(
    vocabulary_size=64, num_layers=2, num_heads=2, hidden_dim=32,
    intermediate_dim=64, head_size=16,
    num_segments=64,  # so any id in [0,64) is a valid segment id
)

# ---------------------------------------------------------------- image CNNs
HUB_CONFIGS["ResNet"] = dict(
    input_conv_filters=[64], input_conv_kernel_sizes=[7],
    stackwise_num_filters=[64, 32], stackwise_num_blocks=[1, 1],  # first filter must be 64
    stackwise_num_strides=[1, 2], block_type="basic_block",
    use_pre_activation=False, image_shape=(64, 64, 3),
)
HUB_CONFIGS["VGG"] = dict(stackwise_num_repeats=[1, 1], stackwise_num_filters=[8, 16], image_shape=(32, 32, 3))
HUB_CONFIGS["DenseNet"] = dict(
    stackwise_num_repeats=[1, 1, 1], compression_ratio=0.5, growth_rate=8,
    image_shape=(32, 32, 3),
)
HUB_CONFIGS["EfficientNet"] = dict(
    stackwise_kernel_sizes=[3, 3], stackwise_num_repeats=[1, 1],
    stackwise_input_filters=[16, 16], stackwise_output_filters=[16, 24],
    stackwise_expansion_ratios=[1, 4],
    stackwise_squeeze_and_excite_ratios=[0.0, 0.25],
    stackwise_strides=[1, 2], stackwise_block_types=["fused", "unfused"],
    stackwise_force_input_filters=[0, 0], stackwise_nores_option=[False, False],
    width_coefficient=1.0, depth_coefficient=1.0, num_features=64,
    input_shape=(32, 32, 3),
)
HUB_CONFIGS["MobileNet"] = dict(
    stackwise_expansion=[[32, 48], [64]],
    stackwise_num_blocks=[2, 1],
    stackwise_num_filters=[[16, 16], [24]],
    stackwise_kernel_size=[[3, 3], [5]],
    stackwise_num_strides=[[2, 1], [2]],
    stackwise_se_ratio=[[None, None], [0.25]],
    stackwise_activation=[["relu", "relu"], ["hard_swish"], ["hard_swish"]],
    stackwise_padding=[[1, 1], [2]],
    output_num_filters=64, input_activation="hard_swish",
    output_activation="hard_swish", input_num_filters=16,
    image_shape=(32, 32, 3), depthwise_filters=8, depthwise_stride=2,
    depthwise_residual=False, squeeze_and_excite=0.5, last_layer_filter=48,
)
HUB_CONFIGS["CSPNet"] = dict(
    stem_filters=16, stem_kernel_size=3, stem_strides=1, stackwise_strides=2,
    stackwise_depth=[1, 1], stackwise_num_filters=[16, 32],
    image_shape=(64, 64, 3), down_growth=True,
    bottle_ratio=(0.5,) + (1.0,), block_ratio=(1.0,) + (0.5,),
    expand_ratio=(2.0,) + (1.0,), block_type="dark_block", stage_type="csp",
    stem_padding="same",
)
HUB_CONFIGS["Xception"] = dict(
    stackwise_conv_filters=[[8, 16], [32, 32], [64, 64]],
    stackwise_pooling=[False, True, False], image_shape=(64, 64, 3),
)
HUB_CONFIGS["HGNetV2"] = dict(
    embedding_size=16, stem_channels=[3, 8, 16], hidden_act="relu",
    use_learnable_affine_block=False, image_shape=(64, 64, 3), depths=[1, 1],
    hidden_sizes=[32, 64],
    stackwise_stage_filters=[[16, 8, 32, 1, 1, 3], [32, 16, 64, 1, 1, 3]],
    apply_downsample=[False, True], use_lightweight_conv_block=[False, False],
)

# ---------------------------------------------------------------- vision transformers
HUB_CONFIGS["MiT"] = dict(
    layerwise_depths=[1, 1], image_shape=(32, 32, 3), hidden_dims=[16, 32],
    num_layers=2, layerwise_num_heads=[1, 2], layerwise_sr_ratios=[4, 2],
    max_drop_path_rate=0.1, layerwise_patch_sizes=[7, 3], layerwise_strides=[4, 2],
)
HUB_CONFIGS["SwinTransformer"] = dict(
    image_shape=(32, 32, 3), embed_dim=16, depths=(1, 1), num_heads=(1, 2),
    window_size=4,
)
HUB_CONFIGS["ViTDet"] = dict(
    image_shape=(32, 32, 3), patch_size=4, hidden_size=32, num_layers=2,
    global_attention_layer_indices=[1], intermediate_dim=64, num_heads=2,
    num_output_channels=16, window_size=4,
)

# ---------------------------------------------------------------- decoder LMs
_smollm3 = dict(
    vocabulary_size=64, hidden_dim=32, intermediate_dim=64, num_layers=2,
    num_attention_heads=4, num_key_value_heads=2, attention_bias=False,
    attention_dropout=0.0, rope_layer_enabled_list=[True, True],
    layer_types=["attention", "attention"], mlp_bias=False,
    layer_norm_epsilon=1e-5, max_position_embeddings=128, rope_theta=10000.0,
    partial_rotary_factor=1.0,
)
HUB_CONFIGS["SmolLM"] = dict(_smollm3)   # SmolLMBackbone is an alias of SmolLM3Backbone
HUB_CONFIGS["SmolLM3"] = dict(_smollm3)
HUB_CONFIGS["Gemma3"] = dict(   # text-only (vision_encoder=None)
    vocabulary_size=64, image_size=16, num_layers=2, num_query_heads=2,
    num_key_value_heads=1, hidden_dim=32, intermediate_dim=64, head_dim=16,
    query_head_dim_normalize=True, use_query_key_norm=True,
    use_post_ffw_norm=True, use_post_attention_norm=True,
    final_logit_soft_cap=None, attention_logit_soft_cap=None,
    use_sliding_window_attention=True, sliding_window_size=1024,
)
HUB_CONFIGS["Qwen3_5Moe"] = dict(
    vocabulary_size=64, num_layers=2, num_query_heads=4, num_key_value_heads=2,
    head_dim=8, hidden_dim=16, moe_intermediate_dim=8,
    shared_expert_intermediate_size=8, num_experts=4, top_k=2,
    layer_types=["linear_attention", "full_attention"],
    partial_rotary_factor=0.25, linear_num_key_heads=2,
    linear_num_value_heads=4, linear_key_head_dim=4, linear_value_head_dim=4,
    linear_conv_kernel_dim=4, router_aux_loss_coefficient=0.01, dtype="float32",
)
HUB_CONFIGS["RWKV7"] = dict(
    vocabulary_size=64, hidden_size=16, num_layers=2, head_size=4,
    intermediate_dim=32, gate_lora=16, mv_lora=8, aaa_lora=8, decay_lora=8,
)

# ---------------------------------------------------------------- seq2seq
HUB_CONFIGS["Moonshine"] = dict(
    vocabulary_size=64, filter_dim=32, encoder_num_layers=1,
    decoder_num_layers=1, hidden_dim=32, intermediate_dim=64,
    encoder_num_heads=4, decoder_num_heads=4, feedforward_expansion_factor=4,
    encoder_use_swiglu_activation=False, decoder_use_swiglu_activation=True,
    max_position_embeddings=256, pad_head_dim_to_multiple_of=None,
    partial_rotary_factor=0.62, dropout=0.0, initializer_range=0.02,
    rope_theta=10000.0, attention_bias=False, attention_dropout=0.0,
)
HUB_INPUT_SHAPES["Moonshine"] = {
    "encoder_input_values": (1, 1600, 1), "encoder_padding_mask": (1, 1600),
}
HUB_CONFIGS["T5Gemma"] = dict(
    vocabulary_size=64, encoder_hidden_dim=32, encoder_intermediate_dim=64,
    encoder_num_layers=2, encoder_num_attention_heads=4,
    encoder_num_key_value_heads=2, encoder_head_dim=8,
    encoder_layer_types=["sliding_attention", "full_attention"],
    decoder_hidden_dim=32, decoder_intermediate_dim=64, decoder_num_layers=2,
    decoder_num_attention_heads=4, decoder_num_key_value_heads=2,
    decoder_head_dim=8,
    decoder_layer_types=["sliding_attention", "full_attention"],
    dropout_rate=0.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
    query_pre_attn_scalar=1.0, attention_bias=False,
    hidden_activation="gelu_approximate", sliding_window=16,
    cross_attention_hidden_size=32, attn_logit_softcapping=50.0,
    rope_max_wavelength=10000.0, initializer_range=0.04, attention_dropout=0.0,
)
HUB_CONFIGS["EdRec"] = dict(
    vocab_size=64, num_layers_enc=2, num_layers_dec=2, num_heads=2,
    hidden_dim=32, intermediate_dim=64, dropout=0.0,
)


# =============================================================================
# Composite backbones (built from tiny sub-encoders) -> zero-arg functions.
# =============================================================================
def _tiny_resnet(num_stages=4, image_shape=(None, None, 3)):
    import keras_hub
    return keras_hub.models.ResNetBackbone(
        input_conv_filters=[64], input_conv_kernel_sizes=[7],
        stackwise_num_filters=[64] + [16] * (num_stages - 1),
        stackwise_num_blocks=[1] * num_stages,
        stackwise_num_strides=[1] + [2] * (num_stages - 1),
        block_type="basic_block", use_pre_activation=False,
        image_shape=image_shape,
    )


def _build_retinanet():
    import keras_hub
    return keras_hub.models.RetinaNetBackbone(
        image_encoder=_tiny_resnet(4), min_level=3, max_level=5, use_p5=True,
        image_shape=(64, 64, 3),
    )


def _build_deeplabv3():
    import keras_hub
    return keras_hub.models.DeepLabV3Backbone(
        image_encoder=_tiny_resnet(3), low_level_feature_key="P2",
        spatial_pyramid_pooling_key="P4", dilation_rates=[2, 4],
        upsampling_size=4, projection_filters=16, image_shape=(64, 64, 3),
    )


def _build_segformer():
    import keras_hub
    enc = keras_hub.models.MiTBackbone(**HUB_CONFIGS["MiT"])
    return keras_hub.models.SegFormerBackbone(image_encoder=enc,
                                              projection_filters=16)


def _build_basnet():
    import keras_hub
    # BASNet feeds its own projection conv (projection_filters channels) into
    # the ResNet stages, so projection_filters must equal the ResNet stem width;
    # a bottleneck ResNet allows a narrow stem (first stage has a conv shortcut).
    enc = keras_hub.models.ResNetBackbone(
        input_conv_filters=[8], input_conv_kernel_sizes=[7],
        stackwise_num_filters=[64, 8, 8, 8], stackwise_num_blocks=[1, 1, 1, 1],
        stackwise_num_strides=[1, 2, 2, 2], block_type="bottleneck_block",
        use_pre_activation=False,
    )
    return keras_hub.models.BASNetBackbone(
        image_encoder=enc, num_classes=1, image_shape=(64, 64, 3),
        projection_filters=8,
    )


def _build_depthanything():
    import keras_hub
    enc = keras_hub.models.DINOV2Backbone(
        patch_size=14, num_layers=4, hidden_dim=16, num_heads=2,
        intermediate_dim=32, layer_scale_init_value=1.0, num_register_tokens=0,
        image_shape=(126, 126, 3), position_embedding_shape=(126, 126, 3),
        apply_layernorm=True, name="image_encoder",
    )
    return keras_hub.models.DepthAnythingBackbone(
        image_encoder=enc, reassemble_factors=[4, 2, 1, 0.5],
        neck_hidden_dims=[8, 16, 16, 32], fusion_hidden_dim=16,
        head_hidden_dim=8, head_in_index=-1,
        feature_keys=["stage1", "stage2", "stage3", "stage4"],
    )


def _build_dfine():
    import keras_hub
    hg = keras_hub.models.HGNetV2Backbone(
        stem_channels=[3, 8, 8],
        stackwise_stage_filters=[[8, 8, 16, 1, 1, 3], [16, 8, 32, 1, 1, 3]],
        apply_downsample=[False, True], use_lightweight_conv_block=[False, False],
        depths=[1, 1], hidden_sizes=[16, 32], embedding_size=8,
        use_learnable_affine_block=True, hidden_act="relu",
        image_shape=(32, 32, 3), out_features=["stage1", "stage2"],
    )
    return keras_hub.models.DFineBackbone(
        backbone=hg, decoder_in_channels=[16, 16], encoder_hidden_dim=16,
        num_denoising=0, num_labels=4, hidden_dim=16, learn_initial_query=False,
        num_queries=10, anchor_image_size=(32, 32), feat_strides=[4, 8],
        num_feature_levels=2, encoder_in_channels=[16, 32],
        encode_proj_layers=[1], num_attention_heads=2, encoder_ffn_dim=32,
        num_encoder_layers=1, hidden_expansion=0.5, depth_multiplier=0.5,
        eval_idx=-1, num_decoder_layers=2, decoder_attention_heads=2,
        decoder_ffn_dim=32, decoder_n_points=[2, 2], lqe_hidden_dim=16,
        num_lqe_layers=2, out_features=["stage1", "stage2"],
        image_shape=(32, 32, 3), seed=0,
    )


def _build_sam():
    import keras_hub
    from keras_hub.src.models.sam.sam_mask_decoder import SAMMaskDecoder
    from keras_hub.src.models.sam.sam_prompt_encoder import SAMPromptEncoder
    img = 64
    enc = keras_hub.models.ViTDetBackbone(
        hidden_size=16, num_layers=2, intermediate_dim=32, num_heads=2,
        global_attention_layer_indices=[1], patch_size=8,
        num_output_channels=16, window_size=4, image_shape=(img, img, 3),
    )
    pe = SAMPromptEncoder(hidden_size=16, image_embedding_size=(8, 8),
                          input_image_size=(img, img), mask_in_channels=8)
    md = SAMMaskDecoder(num_layers=2, hidden_size=16, intermediate_dim=32,
                        num_heads=2, embedding_dim=16, num_multimask_outputs=3,
                        iou_head_depth=2, iou_head_hidden_dim=16)
    return keras_hub.models.SAMBackbone(image_encoder=enc, prompt_encoder=pe,
                                        mask_decoder=md)


HUB_INPUT_SHAPES["SAM"] = {
    "images": (1, 64, 64, 3), "points": (1, 1, 2), "labels": (1, 1),
    "boxes": (1, 1, 2, 2), "masks": (1, 0, 64, 64, 1),
}


def _build_clip():
    import keras_hub
    from keras_hub.src.models.clip.clip_text_encoder import CLIPTextEncoder
    from keras_hub.src.models.clip.clip_vision_encoder import CLIPVisionEncoder
    v = CLIPVisionEncoder(8, 32, 2, 2, 64, image_shape=(32, 32, 3),
                          name="vision_encoder")
    t = CLIPTextEncoder(64, 32, 32, 2, 2, 64, max_sequence_length=16,
                        name="text_encoder")
    return keras_hub.models.CLIPBackbone(vision_encoder=v, text_encoder=t,
                                         projection_dim=32)


def _build_siglip():
    import keras_hub
    from keras_hub.src.models.siglip.siglip_text_encoder import SigLIPTextEncoder
    from keras_hub.src.models.siglip.siglip_vision_encoder import (
        SigLIPVisionEncoder,
    )
    v = SigLIPVisionEncoder(8, 32, 2, 2, 64, image_shape=(32, 32, 3),
                            name="vision_encoder")
    # SigLIP text encoder needs token_ids length == max_sequence_length.
    t = SigLIPTextEncoder(64, 32, 32, 2, 2, 64, max_sequence_length=8,
                          name="text_encoder")
    return keras_hub.models.SigLIPBackbone(vision_encoder=v, text_encoder=t)


HUB_INPUT_SHAPES["SigLIP"] = {"images": (1, 32, 32, 3), "token_ids": (1, 8)}


def _build_metaclip2():
    import keras_hub
    from keras_hub.src.models.metaclip_2.metaclip_2_text_encoder import (
        MetaCLIP2TextEncoder,
    )
    from keras_hub.src.models.metaclip_2.metaclip_2_vision_encoder import (
        MetaCLIP2VisionEncoder,
    )
    v = MetaCLIP2VisionEncoder(8, 32, 2, 2, 64, image_shape=(32, 32, 3),
                               name="vision_encoder")
    t = MetaCLIP2TextEncoder(64, 32, 32, 2, 2, 64, max_sequence_length=16,
                             name="text_encoder")
    return keras_hub.models.MetaCLIP2Backbone(vision_encoder=v, text_encoder=t,
                                              projection_dim=32)


def _build_parseq():
    import keras_hub
    enc = keras_hub.models.ViTBackbone(
        image_shape=(32, 64, 3), patch_size=(4, 8), num_layers=1, num_heads=2,
        hidden_dim=32, mlp_dim=64, use_class_token=False, name="image_encoder",
    )
    return keras_hub.models.PARSeqBackbone(
        image_encoder=enc, vocabulary_size=64, max_label_length=8,
        decoder_hidden_dim=32, num_decoder_layers=1, num_decoder_heads=2,
        decoder_mlp_dim=64, dropout_rate=0.0, attention_dropout=0.0,
    )


HUB_CONFIGS["PaliGemma"] = dict(
    vocabulary_size=64, image_size=16, num_layers=2, num_query_heads=2,
    num_key_value_heads=1, hidden_dim=32, intermediate_dim=64, head_dim=16,
    vit_patch_size=4, vit_num_layers=1, vit_num_heads=2, vit_hidden_dim=32,
    vit_intermediate_dim=64,
)


def _build_blip2():
    import keras_hub
    from keras_hub.src.models.blip2.blip2_custom_opt import BLIP2CustomOPT
    from keras_hub.src.models.blip2.blip2_qformer import BLIP2QFormer
    from keras_hub.src.models.blip2.blip2_vision_encoder import (
        BLIP2VisionEncoder,
    )
    v = BLIP2VisionEncoder(
        image_size=32, patch_size=8, num_layers=1, num_heads=2, hidden_dim=32,
        intermediate_dim=64, use_patch_bias=True, use_class_token=True,
        use_mha_bias=True, use_mlp_bias=True, dropout_rate=0.0,
        layer_norm_epsilon=1e-6, initializer_range=0.02, dtype="float32",
    )
    q = BLIP2QFormer(
        num_query_tokens=4, num_layers=1, num_heads=2, hidden_dim=32,
        intermediate_dim=64, vision_dim=32, cross_attention_frequency=1,
        dropout=0.0, layer_norm_epsilon=1e-6, dtype="float32",
    )
    lm = BLIP2CustomOPT(
        vocabulary_size=64, num_layers=1, num_heads=2, hidden_dim=32,
        intermediate_dim=64, num_query_tokens=4, qformer_hidden_dim=32,
        max_sequence_length=32, dropout=0.0, language_projection=None,
        dtype="float32",
    )
    return keras_hub.models.BLIP2Backbone(vision_encoder=v, qformer=q,
                                          language_model=lm)


HUB_CONFIGS.update({
    "RetinaNet": _build_retinanet,
    "DeepLabV3": _build_deeplabv3,
    "SegFormer": _build_segformer,
    "BASNet": _build_basnet,
    "DepthAnything": _build_depthanything,
    "DFine": _build_dfine,
    "SAM": _build_sam,
    "CLIP": _build_clip,
    "SigLIP": _build_siglip,
    "MetaCLIP2": _build_metaclip2,
    "PARSeq": _build_parseq,
    "BLIP2": _build_blip2,
})


# ---------------------------------------------------------------- Gemma-family multimodal (text-only configs)
HUB_CONFIGS["Gemma3n"] = dict(   # text-only (no vision/audio encoder configs)
    text_vocab_size=64, text_hidden_size=32, num_hidden_layers=2,
    pad_token_id=0, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
    intermediate_size=[64, 64], hidden_activation="gelu_approximate",
    layer_types=["sliding_attention", "full_attention"], sliding_window=4,
    rope_theta=10000.0, max_position_embeddings=64,
    vocab_size_per_layer_input=64, hidden_size_per_layer_input=4,
    altup_num_inputs=2, laurel_rank=2,
)
HUB_CONFIGS["Gemma4"] = dict(   # text-only (vision_encoder=None)
    vocabulary_size=64, image_size=16, num_layers=2, num_query_heads=2,
    num_key_value_heads=1, hidden_dim=32, intermediate_dim=64, head_dim=16,
    use_sliding_window_attention=True, sliding_window_size=16,
    sliding_window_pattern=2, attention_logit_soft_cap=None,
    final_logit_soft_cap=None,
)
HUB_CONFIGS["T5Gemma2"] = dict(HUB_CONFIGS["T5Gemma"], use_query_key_norm=True)  # text-only (vision_encoder=None)

HUB_CONFIGS["MobileNetV5"] = dict(
    stackwise_block_types=[["er"], ["uir", "uir"]],
    stackwise_num_blocks=[1, 2],
    stackwise_num_filters=[[16], [32, 32]],
    stackwise_strides=[[2], [2, 1]],
    stackwise_act_layers=[["relu"], ["relu", "relu"]],
    stackwise_exp_ratios=[[4.0], [4.0, 4.0]],
    stackwise_se_ratios=[[0.0], [0.0, 0.0]],
    stackwise_dw_kernel_sizes=[[0], [5, 5]],
    stackwise_dw_start_kernel_sizes=[[0], [0, 0]],
    stackwise_dw_end_kernel_sizes=[[0], [0, 0]],
    stackwise_exp_kernel_sizes=[[3], [0, 0]],
    stackwise_pw_kernel_sizes=[[1], [0, 0]],
    stackwise_num_heads=[[0], [0, 0]],
    stackwise_key_dims=[[0], [0, 0]],
    stackwise_value_dims=[[0], [0, 0]],
    stackwise_kv_strides=[[0], [0, 0]],
    stackwise_use_cpe=[[False], [False, False]],
    image_shape=(32, 32, 3), stem_size=16, num_features=64, use_msfa=False,
)
HUB_CONFIGS["VideoPrism"] = dict(   # video-only (vocabulary_size=0)
    image_shape=(32, 32, 3), num_frames=4, patch_size=8, hidden_dim=16,
    intermediate_dim=32, num_heads=2, num_spatial_layers=1,
    num_temporal_layers=1, num_auxiliary_layers=1, vocabulary_size=0,
    num_text_layers=0,
)

# ---------------------------------------------------------------- diffusion
HUB_CONFIGS["Flux"] = dict(
    input_channels=16, hidden_size=32, mlp_ratio=2.0, num_heads=2, depth=1,
    depth_single_blocks=1, axes_dim=[4, 6, 6], theta=10_000, use_bias=True,
    guidance_embed=True, image_shape=(16, 16), text_shape=(8, 16),
    image_ids_shape=(16, 3), text_ids_shape=(8, 3), y_shape=(16,),
)


def _build_sd3():
    import keras_hub
    from keras_hub.src.models.clip.clip_text_encoder import CLIPTextEncoder
    from keras_hub.src.models.vae.vae_backbone import VAEBackbone
    # 4 VAE stages -> 8x downsampling, as SD3 assumes (latents = image / 8).
    vae = VAEBackbone([32, 32, 32, 32], [1, 1, 1, 1], [32, 32, 32, 32], [1, 1, 1, 1],
                      sampler_method="mode", name="vae")
    clip_l = CLIPTextEncoder(64, 16, 16, 2, 2, 32, "quick_gelu", -2,  # >=2 layers for index -2
                             max_sequence_length=8, name="clip_l")
    clip_g = CLIPTextEncoder(64, 16, 16, 2, 2, 32, "gelu", -2,
                             max_sequence_length=8, name="clip_g")
    return keras_hub.models.StableDiffusion3Backbone(
        mmdit_patch_size=2, mmdit_hidden_dim=32, mmdit_num_layers=1,
        mmdit_num_heads=2, mmdit_position_size=32, mmdit_qk_norm=None,
        mmdit_dual_attention_indices=None, vae=vae, clip_l=clip_l,
        clip_g=clip_g, image_shape=(32, 32, 3),
    )


def _build_sam3():
    import keras_hub
    from keras_hub.src.models.sam3.sam3_detr_decoder import SAM3DetrDecoder
    from keras_hub.src.models.sam3.sam3_detr_encoder import SAM3DetrEncoder
    from keras_hub.src.models.sam3.sam3_geometry_encoder import (
        SAM3GeometryEncoder,
    )
    from keras_hub.src.models.sam3.sam3_mask_decoder import SAM3MaskDecoder
    from keras_hub.src.models.sam3.sam3_text_encoder import SAM3TextEncoder
    from keras_hub.src.models.sam3.sam3_vision_encoder import SAM3VisionEncoder
    img = 28
    return keras_hub.models.SAM3PromptableConceptBackbone(
        vision_encoder=SAM3VisionEncoder(
            image_shape=(img, img, 3), patch_size=14, num_layers=2,
            hidden_dim=16, intermediate_dim=32, num_heads=2, fpn_hidden_dim=16,
            fpn_scale_factors=[4.0, 2.0, 1.0, 0.5],
            pretrain_image_shape=(42, 42, 3), window_size=2,
            global_attn_indexes=[1, 2],
        ),
        text_encoder=SAM3TextEncoder(
            vocabulary_size=64, embedding_dim=16, hidden_dim=16, num_layers=1,
            num_heads=2, intermediate_dim=32,
        ),
        geometry_encoder=SAM3GeometryEncoder(
            num_layers=1, hidden_dim=16, intermediate_dim=32, num_heads=2,
            roi_size=7,
        ),
        detr_encoder=SAM3DetrEncoder(num_layers=1, hidden_dim=16,
                                     intermediate_dim=32, num_heads=2),
        detr_decoder=SAM3DetrDecoder(
            image_shape=(img, img, 3), patch_size=14, num_layers=1,
            hidden_dim=16, intermediate_dim=32, num_heads=2, num_queries=8,
        ),
        mask_decoder=SAM3MaskDecoder(num_upsampling_stages=3, hidden_dim=16,
                                     num_heads=2),
    )


HUB_CONFIGS.update({
    "StableDiffusion3": _build_sd3,
    "SAM3PromptableConcept": _build_sam3,
})


HUB_INPUT_SHAPES["SAM3PromptableConcept"] = {
    "pixel_values": (1, 28, 28, 3), "token_ids": (1, 8), "padding_mask": (1, 8),
    "boxes": (1, 1, 5), "box_labels": (1, 1),
}

# Inputs whose *values* (not only shapes) matter; each value is a function
# (shape) -> numpy array.  Optional: other inputs can be filled generically.
def _uniform01(shape):
    import numpy as np
    return np.random.default_rng(0).uniform(0.2, 0.6, size=shape).astype("float32")


def _zeros_i32(shape):
    import numpy as np
    return np.zeros(shape, dtype="int32")


def _arange_i32(shape):
    import numpy as np
    return np.broadcast_to(np.arange(shape[-1], dtype="int32"), shape).copy()


HUB_INPUT_VALUES = {
    # SAM3 box_labels must be 0/1 (ids >= 2 fail in a TensorScatterUpdate);
    # boxes are normalized cxcywh-style floats (random normals also run).
    "SAM3PromptableConcept": {"boxes": _uniform01, "box_labels": _zeros_i32},
    # Gemma4 takes explicit position ids (random ids also run).
    "Gemma4": {"position_ids": _arange_i32},
    # Segment ids are 0/1 in real use (num_segments=64 here so random ids work).
    "Electra": {"segment_ids": _zeros_i32},
    "RoformerV2": {"segment_ids": _zeros_i32},
}


# ---------------------------------------------------------------- FeaturePyramid
def _build_feature_pyramid():
    """FeaturePyramidBackbone is the abstract base class (a functional Backbone
    with a `pyramid_outputs` dict); build a tiny 3-level conv pyramid with it.
    Outputs are the pyramid levels P1..P3 as a dict."""
    import keras
    import keras_hub
    inputs = keras.Input(shape=(32, 32, 3), name="images")
    x = inputs
    pyramid = {}
    for level, filters in zip((1, 2, 3), (8, 16, 32)):
        x = keras.layers.Conv2D(filters, 3, strides=2, padding="same",
                                name=f"conv{level}")(x)
        x = keras.layers.BatchNormalization(name=f"bn{level}")(x)
        x = keras.layers.Activation("relu", name=f"relu{level}")(x)
        pyramid[f"P{level}"] = x
    model = keras_hub.models.FeaturePyramidBackbone(
        inputs=inputs, outputs=dict(pyramid), name="feature_pyramid_backbone")
    model.pyramid_outputs = pyramid
    return model


HUB_CONFIGS["FeaturePyramid"] = _build_feature_pyramid
