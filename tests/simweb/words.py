"""Topic vocabularies. Topic k < len(TOPICS) uses a hand-written list; further topics get
generated pseudo-words, so any K works and topics never share words."""
from __future__ import annotations

import random

TOPICS = [
    ("sports", "football league match goal striker referee stadium season coach tennis "
               "marathon trophy tournament champion playoff goalkeeper sprint medal olympic"),
    ("finance", "stock bond market dividend equity portfolio interest inflation banking "
                "investor hedge currency exchange credit loan mortgage treasury bullion"),
    ("science", "physics quantum molecule protein genome telescope galaxy particle neutron "
                "laboratory experiment hypothesis enzyme photon isotope fossil climate"),
    ("cooking", "recipe oven garlic pasta basil simmer roast butter flour dough sauce "
                "saffron skillet marinade pastry vinegar pepper cinnamon risotto"),
    ("travel", "airport hotel passport beach island itinerary luggage museum cruise "
               "hostel backpack visa souvenir tourist harbor mountain glacier safari"),
    ("music", "guitar melody chord symphony orchestra violin album concert rhythm tempo "
              "lyrics drummer piano soprano opera jazz ballad chorus"),
    ("health", "vaccine clinic nurse therapy diabetes cardiology nutrition vitamin "
               "surgery patient diagnosis allergy fitness cholesterol insomnia"),
    ("computing", "compiler kernel database server python algorithm network protocol "
                  "encryption processor memory cache thread crawler parser bytecode"),
    ("gardening", "tulip compost seedling pruning orchard greenhouse mulch fertilizer "
                  "perennial shrub hedge lawn orchid trowel irrigation blossom"),
    ("history", "empire dynasty medieval pharaoh revolution treaty monarch archive "
                "castle crusade renaissance republic chronicle battle artifact"),
]

CHINESE = [
    "足球 比赛 冠军 球队 教练 体育场",
    "股票 市场 银行 投资 利率 货币",
    "科学 物理 实验 基因 宇宙 分子",
    "烹饪 菜谱 面条 米饭 调料 厨房",
    "旅游 酒店 机场 护照 海滩 博物馆",
    "音乐 吉他 钢琴 歌曲 乐队 音乐会",
    "健康 医院 医生 疫苗 营养 手术",
    "计算机 网络 数据库 服务器 算法 程序",
    "园艺 花园 种子 施肥 温室 果树",
    "历史 王朝 皇帝 革命 城堡 文物",
]

LATIN1 = "café naïve façade résumé über jalapeño señor crème brûlée déjà vu garçon".split()

FILLER = ("the of and a in to is for on with as by at from that this new more about "
          "report update notes guide review").split()


def topic_name(k: int) -> str:
    return TOPICS[k][0] if k < len(TOPICS) else f"topic{k}"


def topic_words(k: int) -> list[str]:
    if k < len(TOPICS):
        return TOPICS[k][1].split()
    rng = random.Random(1000 + k)
    syll = ["ka", "lo", "mi", "zu", "te", "ran", "vex", "qui", "bor", "dal", "nim", "sor"]
    return [f"{rng.choice(syll)}{rng.choice(syll)}{rng.choice(syll)}{k}" for _ in range(18)]


def chinese_words(k: int) -> list[str]:
    return CHINESE[k % len(CHINESE)].split()
