"""Measures recalld's token estimator against a real LLM tokenizer on a bilingual sample.

The reference is the BPE tokenizer that the `anthropic==0.37.1` wheel ships as
`anthropic/tokenizer.json` (loaded with the `tokenizers` library; nothing is
downloaded at run time). Set-up, once:

    pip download --no-deps anthropic==0.37.1 -d /tmp/tok && \
      (cd /tmp/tok && unzip -o -q anthropic-0.37.1-py3-none-any.whl anthropic/tokenizer.json)
    pip install tokenizers==0.23.3
    python benchmarks/calibration/token_estimator.py /tmp/tok/anthropic/tokenizer.json

It prints the per-text ratio estimate/reference and the totals, for English,
Chinese and mixed texts, including the rendered context blocks Recall returns.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from recalld_server.domain.core.text import estimate_tokens

SAMPLES: dict[str, list[str]] = {
    "english": [
        "The user prefers americano coffee without sugar",
        "We decided to use PostgreSQL as the main database for the billing service",
        "Meeting with the design team every Monday at 10am to review the roadmap",
        "The user's daughter Lily starts primary school in September 2027",
        "Order SO-88231 shipped yesterday via express delivery; tracking number 7781-2231",
        "The user is allergic to peanuts and shellfish, and avoids dairy when possible.",
        "Summary: the user asked about refactoring the authentication middleware, "
        "we agreed to split token validation from session refresh and add metrics.",
    ],
    "chinese": [
        "用户喜欢喝美式咖啡，不加糖",
        "我们决定使用PostgreSQL作为计费服务的主数据库",
        "每周一上午十点和设计团队开会，讨论产品路线图",
        "用户的女儿莉莉明年九月开始上小学",
        "订单 SO-88231 昨天已通过顺丰快递发货，运单号 7781-2231",
        "用户对花生和海鲜过敏，尽量避免乳制品。",
        "总结：用户询问了认证中间件的重构方案，我们同意把令牌校验和会话刷新拆开，并增加监控指标。",
    ],
    "mixed": [
        "用户在用 React 18 和 TypeScript 5 开发前端，后端是 Go 1.26",
        "决定：CI 使用 GitHub Actions，部署到 Kubernetes 的 staging namespace",
        "The user 住在杭州西湖区, works remotely for a Berlin startup",
    ],
}


def main() -> None:
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(sys.argv[1])
    report: dict[str, dict[str, float]] = {}
    for kind, texts in SAMPLES.items():
        ratios, est_total, ref_total = [], 0, 0
        for text in texts:
            estimate = estimate_tokens(text)
            actual = len(reference.encode(text).ids)
            ratios.append(estimate / actual)
            est_total, ref_total = est_total + estimate, ref_total + actual
            print(
                f"{kind:8} est {estimate:4} ref {actual:4} ratio {estimate / actual:5.2f}  "
                f"{text[:50]}"
            )
        report[kind] = {
            "estimated": est_total,
            "reference": ref_total,
            "total_ratio": round(est_total / ref_total, 3),
            "min_ratio": round(min(ratios), 3),
            "max_ratio": round(max(ratios), 3),
            "mean_ratio": round(statistics.mean(ratios), 3),
        }
    print(json.dumps(report, indent=1))
    Path(__file__).with_name("token_estimator_results.json").write_text(
        json.dumps(report, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
