// The generated trainers' command line (zoc/train/options.h), on the CPU: both modes parse,
// every malformed option is refused with a message naming it, the learning-rate schedule equals
// tools/train/train_pytorch.py's learning_rate() (values printed by it), and a checkpoint's
// optimizer state is named as documented.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zoc/train/options.h"

namespace {

zoc::Expected<zoc::TrainArgs> parse(std::vector<std::string> words) {
  words.insert(words.begin(), "resnet50_train_main");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  return zoc::parse_train_args(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> words) {
  auto a = parse(std::move(words));
  return a ? std::string("(parsed)") : a.error().message;
}

TEST(TrainOptions, TrainModeTakesEveryOption) {
  auto a = parse({"--data",         "d",
                  "--dataset",      "cifar10",
                  "--epochs",       "3",
                  "--batch",        "64",
                  "--lr",           "0.05",
                  "--momentum",     "0.8",
                  "--weight-decay", "1e-4",
                  "--schedule",     "step",
                  "--seed",         "7",
                  "--weights",      "w.safetensors",
                  "--max-steps",    "10",
                  "--csv",          "c.csv",
                  "--json",         "j.jsonl",
                  "--checkpoint",   "k.safetensors",
                  "--mean",         "0.5,0.25,0.125",
                  "--std",          "1,2,4",
                  "--resize",       "64",
                  "--channels",     "3",
                  "--no-graph",     "--no-benchmark",
                  "--loss-scale",   "1024",
                  "--no-dropout",   "--deterministic",
                  "--no-fused-sgd"});
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_TRUE(a->fit);
  const zoc::FitArgs& f = a->fit_args;
  EXPECT_EQ(f.data, "d");
  EXPECT_EQ(f.dataset, "cifar10");
  EXPECT_EQ(f.epochs, 3);
  EXPECT_EQ(f.batch, 64);
  EXPECT_DOUBLE_EQ(f.lr, 0.05);
  EXPECT_DOUBLE_EQ(f.momentum, 0.8);
  EXPECT_DOUBLE_EQ(f.weight_decay, 1e-4);
  EXPECT_EQ(f.schedule, "step");
  EXPECT_EQ(f.seed, 7u);
  EXPECT_EQ(f.weights, "w.safetensors");
  EXPECT_EQ(f.max_steps, 10);
  EXPECT_EQ(f.checkpoint, "k.safetensors");
  EXPECT_EQ(f.mean, (std::vector<float>{0.5f, 0.25f, 0.125f}));
  EXPECT_EQ(f.stddev, (std::vector<float>{1.0f, 2.0f, 4.0f}));
  EXPECT_EQ(f.resize, 64);
  EXPECT_EQ(f.channels, 3);
  EXPECT_FALSE(f.graph);
  EXPECT_FALSE(f.benchmark);
  EXPECT_FALSE(f.dropout);
  EXPECT_TRUE(f.deterministic);
  EXPECT_FALSE(f.fused_sgd);
  EXPECT_DOUBLE_EQ(f.loss_scale, 1024.0);
}

TEST(TrainOptions, DefaultsAreTheBaselines) {
  auto a = parse({"--data", "d"});
  ASSERT_TRUE(a) << a.error().message;
  const zoc::FitArgs& f = a->fit_args;
  EXPECT_EQ(f.dataset, "fashion-mnist");
  EXPECT_EQ(f.epochs, 5);
  EXPECT_EQ(f.batch, 128);
  EXPECT_DOUBLE_EQ(f.lr, 0.1);
  EXPECT_DOUBLE_EQ(f.momentum, 0.9);
  EXPECT_DOUBLE_EQ(f.weight_decay, 5e-4);
  EXPECT_EQ(f.schedule, "cosine");
  EXPECT_DOUBLE_EQ(f.label_smoothing, 0.0);
  EXPECT_EQ(f.optimizer, "sgd");
  EXPECT_TRUE(f.graph && f.benchmark && f.dropout && f.fused_sgd);
  EXPECT_FALSE(f.deterministic);
}

TEST(TrainOptions, OneBatchMode) {
  auto a = parse({"--batch-file", "b.safetensors", "--out", "g.safetensors", "--steps", "3",
                  "--label-smoothing", "0.1"});
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_FALSE(a->fit);
  EXPECT_EQ(a->steps, 3);
  EXPECT_DOUBLE_EQ(a->fit_args.label_smoothing, 0.1);
}

// --optimizer adamw takes torch.optim.AdamW's defaults where --lr and --weight-decay are not
// given; each optimizer refuses the other's settings by name.
TEST(TrainOptions, AdamWHasPyTorchsDefaults) {
  auto a = parse({"--data", "d", "--optimizer", "adamw"});
  ASSERT_TRUE(a) << a.error().message;
  const zoc::FitArgs& f = a->fit_args;
  EXPECT_EQ(f.optimizer, "adamw");
  EXPECT_DOUBLE_EQ(f.lr, 1e-3);
  EXPECT_DOUBLE_EQ(f.weight_decay, 1e-2);
  EXPECT_DOUBLE_EQ(f.beta1, 0.9);
  EXPECT_DOUBLE_EQ(f.beta2, 0.999);
  EXPECT_DOUBLE_EQ(f.eps, 1e-8);
  auto b = parse({"--data", "d", "--optimizer", "adamw", "--lr", "3e-4", "--weight-decay", "0",
                  "--betas", "0.8,0.99", "--eps", "1e-6"});
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_DOUBLE_EQ(b->fit_args.lr, 3e-4);
  EXPECT_DOUBLE_EQ(b->fit_args.weight_decay, 0.0);
  EXPECT_DOUBLE_EQ(b->fit_args.beta1, 0.8);
  EXPECT_DOUBLE_EQ(b->fit_args.beta2, 0.99);
  EXPECT_DOUBLE_EQ(b->fit_args.eps, 1e-6);
  EXPECT_EQ(error_of({"--data", "d", "--optimizer", "adamw", "--momentum", "0.9"}),
            "--momentum is SGD's: AdamW takes --betas B1,B2");
  EXPECT_EQ(error_of({"--data", "d", "--optimizer", "adam"}),
            "--optimizer adam: expected sgd or adamw");
  EXPECT_EQ(error_of({"--data", "d", "--optimizer", "adamw", "--betas", "0.9"}),
            "--betas takes two numbers: B1,B2");
  EXPECT_EQ(error_of({"--data", "d", "--optimizer", "adamw", "--betas", "0.9,1"}),
            "--betas must be in [0, 1) and --eps positive");
  EXPECT_EQ(error_of({"--data", "d", "--betas", "0.9,x"}),
            "option --betas: '0.9,x' is not a valid number");
  EXPECT_EQ(error_of({"--data", "d", "--eps", "1e-6"}),
            "--betas and --eps are AdamW's: add --optimizer adamw");
}

TEST(TrainOptions, LossScaleIsAPositiveScale) {
  auto a = parse({"--batch-file", "b", "--out", "g", "--loss-scale", "128"});
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_DOUBLE_EQ(a->fit_args.loss_scale, 128.0);
  EXPECT_DOUBLE_EQ(parse({"--data", "d"})->fit_args.loss_scale, 0.0);  // GradScaler's default
  for (const char* bad : {"0", "0.5", "-4", "3e7", "nan", "inf"}) {
    EXPECT_EQ(error_of({"--data", "d", "--loss-scale", bad}),
              "--loss-scale must be in 1..16777216 (2^24)")
        << bad;
  }
}

// PyTorch's cross_entropy takes label_smoothing in [0, 1]; 1 would ignore the labels.
TEST(TrainOptions, LabelSmoothingIsInZeroToOne) {
  for (const char* bad : {"-0.1", "1", "nan"}) {
    EXPECT_EQ(error_of({"--data", "d", "--label-smoothing", bad}),
              "--label-smoothing must be in [0, 1)")
        << bad;
  }
}

TEST(TrainOptions, MalformedOptionsAreRefusedByName) {
  EXPECT_EQ(error_of({"--data", "d", "--bogus", "1"}), "unknown option --bogus");
  EXPECT_EQ(error_of({"--data"}), "option --data needs a value");
  EXPECT_EQ(error_of({"--data", "d", "--epochs", "5x"}),
            "option --epochs: '5x' is not a valid number");
  EXPECT_EQ(error_of({"--data", "d", "--lr", ""}), "option --lr: '' is not a valid number");
  EXPECT_EQ(error_of({"--data", "d", "--mean", "0.5,,1"}),
            "option --mean: '0.5,,1' is not a valid number");
  EXPECT_EQ(error_of({"--data", "d", "--epochs", "0"}), "--epochs must be in 1..100000");
  EXPECT_EQ(error_of({"--data", "d", "--batch", "1"}),
            "--batch must be in 2..65536 (training-mode batch norm needs two samples)");
  EXPECT_EQ(error_of({"--data", "d", "--schedule", "linear"}),
            "--schedule linear: expected cosine, step or constant");
  EXPECT_EQ(error_of({"--data", "d", "--lr", "-1"}),
            "--lr must be positive, --momentum and --weight-decay non-negative");
  EXPECT_EQ(error_of({"--data", "d", "--max-steps", "-2"}), "--max-steps must be >= 0");
  EXPECT_EQ(error_of({"--data", "d", "--resize", "0"}), "--resize must be in 1..4096");
  EXPECT_EQ(error_of({"--data", "d", "--channels", "17"}), "--channels must be in 1..16");
  EXPECT_EQ(error_of({"--data", "d", "--resume", "c", "--weights", "w"}),
            "--resume already gives the weights: drop --weights");
  EXPECT_EQ(error_of({"--data", "d", "--batch-file", "b", "--out", "g"}),
            "--data (train) and --batch-file/--out (one batch) are different modes");
  EXPECT_EQ(error_of({}),
            "either --data DIR (train) or --batch-file B --out G (one batch) is required");
  EXPECT_EQ(error_of({"--batch-file", "b", "--out", "g", "--steps", "-1"}),
            "--steps must be in 0..100000");
}

// Expected values printed by tools/train/train_pytorch.py's learning_rate(schedule, base,
// epoch, epochs, step, steps_per_epoch) with CPython on 2026-11-22.
TEST(TrainOptions, ScheduleEqualsThePyTorchBaselines) {
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("cosine", 0.1, 0, 5, 0, 468), 0.1);
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("cosine", 0.1, 2, 5, 100, 468), 0.05894671530344664);
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("cosine", 0.1, 4, 5, 467, 468), 4.506174172136391e-08);
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("step", 0.1, 2, 5, 0, 468), 0.1);
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("step", 0.1, 3, 5, 0, 468), 0.010000000000000002);
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("step", 0.1, 4, 5, 0, 468), 0.0010000000000000002);
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("step", 0.05, 1, 4, 0, 10), 0.05);
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("step", 0.05, 2, 4, 0, 10), 0.005000000000000001);
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("step", 0.05, 3, 4, 0, 10), 0.0005000000000000001);
  EXPECT_DOUBLE_EQ(zoc::scheduled_lr("constant", 0.05, 3, 5, 7, 468), 0.05);
}

TEST(TrainOptions, OptimizerStateLivesBesideTheCheckpoint) {
  EXPECT_EQ(zoc::optim_path_for("out/ckpt.safetensors"), "out/ckpt.optim.safetensors");
  EXPECT_EQ(zoc::optim_path_for("ckpt"), "ckpt.optim.safetensors");
  EXPECT_EQ(zoc::optim_path_for(".safetensors"), ".safetensors.optim.safetensors");
}

}  // namespace
