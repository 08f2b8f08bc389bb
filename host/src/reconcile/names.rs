//! k8gb's name formulas: local-targets records, NS names, zone matching, delegation objects.

/// The record a cluster publishes its own healthy addresses under: `localtargets-<host>`.
pub fn local_targets_name(host: &str) -> String {
    format!("localtargets-{host}")
}

/// A cluster's NS name for a delegated zone, exactly as k8gb forms it:
/// `<prefix><geoTag>-<zone minus parent, dots as dashes>.<parent>`,
/// e.g. `gslb-ns-eu-cloud.example.com` for zone `cloud.example.com` under `example.com`.
pub fn ns_name(prefix: &str, geo_tag: &str, load_balanced_zone: &str, parent_zone: &str) -> String {
    let zone = load_balanced_zone.trim_end_matches('.');
    let parent = parent_zone.trim_end_matches('.');
    let relative = zone.strip_suffix(&format!(".{parent}")).unwrap_or(zone);
    format!("{prefix}{geo_tag}-{}.{parent}", relative.replace('.', "-"))
}

/// The geo tag inside an NS name formed by [`ns_name`], if it is one.
pub fn geo_tag_from_ns_name(prefix: &str, ns: &str, load_balanced_zone: &str, parent_zone: &str) -> Option<String> {
    let zone = load_balanced_zone.trim_end_matches('.');
    let parent = parent_zone.trim_end_matches('.');
    let relative = zone.strip_suffix(&format!(".{parent}")).unwrap_or(zone);
    let tail = format!("-{}.{parent}", relative.replace('.', "-"));
    let tag = ns.trim_end_matches('.').strip_prefix(prefix)?.strip_suffix(&tail)?;
    (!tag.is_empty()).then(|| tag.to_string())
}

/// The external-dns DNSEndpoint carrying a zone's delegation: `k8gb-ns-extdns-<zone, dots as dashes>`.
pub fn delegation_endpoint_name(load_balanced_zone: &str) -> String {
    format!("k8gb-ns-extdns-{}", load_balanced_zone.trim_end_matches('.').replace('.', "-"))
}

/// The zone `host` belongs to: the longest zone it equals or ends with at a label boundary.
/// (k8gb matches substrings, so `app.cloud.example.com.evil.io` "belongs" to `cloud.example.com`.)
pub fn zone_of<'a>(host: &str, zones: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    zones
        .into_iter()
        .filter(|zone| {
            let zone = zone.trim_end_matches('.').to_ascii_lowercase();
            host == zone || host.ends_with(&format!(".{zone}"))
        })
        .max_by_key(|zone| zone.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_names_match_k8gb() {
        assert_eq!(ns_name("gslb-ns-", "eu", "cloud.example.com", "example.com"), "gslb-ns-eu-cloud.example.com");
        assert_eq!(
            ns_name("gslb-ns-", "us", "k8gb-test.gslb.cloud.example.com", "cloud.example.com"),
            "gslb-ns-us-k8gb-test-gslb.cloud.example.com"
        );
        assert_eq!(geo_tag_from_ns_name("gslb-ns-", "gslb-ns-eu-west-cloud.example.com.", "cloud.example.com", "example.com").as_deref(), Some("eu-west"));
        assert_eq!(geo_tag_from_ns_name("gslb-ns-", "ns1.example.com", "cloud.example.com", "example.com"), None);
        assert_eq!(delegation_endpoint_name("cloud.example.com"), "k8gb-ns-extdns-cloud-example-com");
        assert_eq!(local_targets_name("app.cloud.example.com"), "localtargets-app.cloud.example.com");
    }

    #[test]
    fn zones_match_on_label_boundaries_longest_first() {
        let zones = ["cloud.example.com", "eu.cloud.example.com"];
        assert_eq!(zone_of("app.cloud.example.com", zones), Some("cloud.example.com"));
        assert_eq!(zone_of("APP.eu.cloud.example.com.", zones), Some("eu.cloud.example.com"));
        assert_eq!(zone_of("app.cloud.example.com.evil.io", zones), None);
        assert_eq!(zone_of("appcloud.example.com", zones), None);
    }
}
