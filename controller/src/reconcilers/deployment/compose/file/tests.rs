//! A sample stack read whole, what Berth refuses by path, and Compose durations.

use super::values::duration;
use super::*;

const STACK: &str = r#"
name: shop
x-common: &common
  restart: unless-stopped
services:
  web:
    build:
      context: ./web
      args: { VERSION: "${VERSION:-dev}" }
    command: ["httpd", "-f", "-p", "8080"]
    environment:
      DATABASE_URL: postgres://db/app
      GREETING: "${GREETING}"
      PRICE: "$$5"
    depends_on:
      db: { condition: service_healthy }
    <<: *common
  worker:
    image: berth/busybox:1
    command: sh -c 'echo "working" && sleep 3600'
    environment: [QUEUE=jobs, UNSET]
    volumes: ["jobs:/var/jobs", { type: volume, source: jobs, target: /ro, read_only: true }]
    depends_on: [db]
  db:
    image: berth/busybox:1
    healthcheck:
      test: ["CMD", "true"]
      interval: 1s
      timeout: 1m30s
      retries: 3
volumes:
  jobs:
"#;

fn variables() -> HashMap<String, String> {
    HashMap::from([("GREETING".to_string(), "hello".to_string())])
}

#[test]
fn a_stack_is_read_with_its_services_volumes_and_order() {
    let file = parse(STACK, &variables()).unwrap();
    let names: Vec<_> = file.services.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["web", "worker", "db"]);
    let web = &file.services[0];
    assert_eq!(web.build.as_ref().unwrap().context, "./web");
    assert_eq!(web.build.as_ref().unwrap().args["VERSION"], "dev");
    assert_eq!(web.restart.as_deref(), Some("unless-stopped"));
    assert!(
        web.environment
            .contains(&("GREETING".into(), "hello".into()))
    );
    assert!(web.environment.contains(&("PRICE".into(), "$5".into())));
    assert_eq!(web.depends_on[0].condition, Condition::Healthy);
    let worker = &file.services[1];
    assert_eq!(
        worker.command.as_deref().unwrap(),
        ["sh", "-c", "echo \"working\" && sleep 3600"]
    );
    assert_eq!(
        worker.environment,
        vec![("QUEUE".to_string(), "jobs".to_string())]
    );
    assert!(worker.volumes[1].read_only);
    let db = &file.services[2];
    let check = db.healthcheck.as_ref().unwrap();
    assert_eq!(check.timeout, Some(Duration::from_secs(90)));
    let order: Vec<_> = start_order(&file)
        .unwrap()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(order, ["db", "web", "worker"]);
    assert_eq!(file.volumes, ["jobs"]);
}

#[test]
fn what_berth_cannot_honour_is_refused_by_path() {
    let cases = [
        (
            "services:\n  web:\n    image: a\n    ports: ['80:80']\n",
            "services.web.ports",
        ),
        (
            "services:\n  web:\n    image: a\n    volumes: ['./data:/data']\n",
            "services.web.volumes[0]",
        ),
        (
            "services:\n  web:\n    image: a\n    container_name: x\n",
            "services.web.container_name",
        ),
        ("services:\n  web:\n    command: x\n", "services.web"),
        (
            "services:\n  web:\n    image: a\n    depends_on: [db]\n",
            "services.web.depends_on",
        ),
        (
            "services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on: [a]\n",
            "services.a.depends_on",
        ),
        (
            "services:\n  web:\n    image: a\nnetworks:\n  front: {}\n",
            "networks",
        ),
        ("services:\n  Web:\n    image: a\n", "services.Web"),
        (
            "services:\n  web:\n    image: a\n    volumes: ['data:/d']\n",
            "services.web.volumes",
        ),
        (
            "volumes:\n  data:\n    driver: nfs\nservices:\n  web:\n    image: a\n",
            "volumes.data",
        ),
        ("services: {}\n", "services"),
    ];
    for (text, path) in cases {
        let refused = parse(text, &HashMap::new()).unwrap_err();
        assert_eq!(refused.path, path, "{text}: {refused}");
    }
}

#[test]
fn durations_read_as_compose_writes_them() {
    let read = |text: &str| duration("d", &Value::String(text.into()));
    assert_eq!(read("1m30s").unwrap(), Duration::from_secs(90));
    assert_eq!(read("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(read("2h").unwrap(), Duration::from_secs(7200));
    assert!(read("10").is_ok() && read("ten").is_err() && read("5x").is_err());
}
